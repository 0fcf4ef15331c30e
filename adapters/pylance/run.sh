#!/usr/bin/env bash
# Runs the conformance corpus against pylance 14.0.2 through adapters/pylance/testee.py.
#
#   PYLANCE_VENV=/path/to/venv adapters/pylance/run.sh [extra `lance-conformance run` args]
#
# PYLANCE_VENV (default: .venv at the repository root, as in .ci/run) is created when missing, with
# pylance==14.0.2 and pyarrow. LANCE_CONFORMANCE (default: target/release/lance-conformance,
# built when missing) is the runner binary. Exit status: the runner's (0 pass, 1 conformance
# failure, 2 runner error).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
venv="${PYLANCE_VENV:-$root/.venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet pylance==14.0.2 pyarrow
fi
"$venv/bin/python" -c 'import lance, sys; sys.exit(0 if lance.__version__ == "14.0.2" else "pylance " + lance.__version__ + " is not 14.0.2")'
runner="${LANCE_CONFORMANCE:-$root/target/release/lance-conformance}"
if [ ! -x "$runner" ]; then
    cargo build --release --bin lance-conformance
    runner="${CARGO_TARGET_DIR:-$root/target}/release/lance-conformance"
fi
export LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES=1
exec "$runner" run \
    --reader-cmd "$venv/bin/python $root/adapters/pylance/testee.py" \
    --known-failures "$root/adapters/pylance/known-failures.txt" \
    "$@"
