#!/usr/bin/env bash
# Runs the conformance corpus against one pylance release through adapters/pylance/testee.py.
#
#   adapters/pylance/run.sh [--version V | --venv DIR] [--gates on|off]
#                           [--writer [--data-file-version F]]
#                           [--known-failures FILE] [--] [more `lance-conformance run` arguments]
#
#   --version V     pylance V, in the venv $PYLANCE_VENVS/pylance-V (PYLANCE_VENVS defaults to
#                   target/venvs, which git ignores), created with `pip install pylance==V
#                   pyarrow` when missing. With --venv too, DIR is used and must hold pylance V.
#   --venv DIR      the venv to use (PYLANCE_VENV does the same). Without --version it must exist.
#                   Without either: .venv at the repository root, created with pylance 14.0.2.
#   --gates on|off  set (on) or clear (off) every LANCE_ENABLE_UNSTABLE_* variable that gates a
#                   reader feature flag. Without it the environment decides. Lance tests whether
#                   a gate is set, not its value, so "off" unsets them.
#   --writer        judge pylance as a writer (spec/conformance.md §7): the same testee.py, started
#                   with `run --writer-cmd`, replays every writer case through write, prepare and
#                   commit (adapters/pylance/writer.py), and the kit judges each version it
#                   commits. Its known failures are known-failures/writer-<version>[-gates-off].txt.
#   --data-file-version F
#                   (with --writer) the run asks for data file version F (2.0, 2.2) in every
#                   write, and checks that each version written lists only files of F
#                   (`run --data-file-version`, spec/conformance.md §7). The adapter writes 2.0
#                   when asked for nothing; for any F but 2.0 the known failures are
#                   known-failures/writer-<version>[-gates-off]-<F>.txt.
#   --known-failures FILE
#                   instead of adapters/pylance/known-failures/[writer-]<version>[-gates-off].txt, the file
#                   picked from the version and whether its gates are on. A missing file is
#                   reported and the run goes on with an empty list (the runner then prints
#                   every entry to add), unless --update-known-failures is passed on to the
#                   runner, which then writes the file.
#
# The run is labelled "pylance V, gates on|off" (or "pylance V" for a release without gates;
# "pylance V writer, ..." with --writer) for the reports, unless a --label is passed on to the
# runner.
#
# LANCE_CONFORMANCE (default: target/release/lance-conformance, built when missing) is the
# runner binary. Exit status: the runner's (0 pass, 1 conformance failure, 2 runner error), and
# 2 for a set-up problem here: no venv, a venv with another pylance, a pylance that cannot be
# imported, a runner binary that is not lance-conformance.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

setup_error() {
    echo "run.sh: $*" >&2
    exit 2
}

# Whether the runner arguments after the first include $1.
has_arg() {
    local want="$1"
    shift
    for a in "$@"; do
        [ "$a" = "$want" ] && return 0
    done
    return 1
}

version=""
venv="${PYLANCE_VENV:-}"
gates=""
known=""
role=reader
file_version=""
while [ $# -gt 0 ]; do
    case "$1" in
        --version) [ $# -ge 2 ] || setup_error "--version needs a value"; version="$2"; shift 2 ;;
        --venv) [ $# -ge 2 ] || setup_error "--venv needs a value"; venv="$2"; shift 2 ;;
        --gates)
            [ $# -ge 2 ] || setup_error "--gates needs on or off"
            case "$2" in on | off) gates="$2" ;; *) setup_error "--gates takes on or off, not '$2'" ;; esac
            shift 2 ;;
        --known-failures) [ $# -ge 2 ] || setup_error "--known-failures needs a file"; known="$2"; shift 2 ;;
        --writer) role=writer; shift ;;
        --data-file-version) [ $# -ge 2 ] || setup_error "--data-file-version needs a value"; file_version="$2"; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
        --) shift; break ;;
        *) break ;;
    esac
done

if [ -n "$file_version" ] && [ "$role" != writer ]; then
    setup_error "--data-file-version is for a writer run (--writer)"
fi

# ---- the venv
if [ -z "$venv" ]; then
    if [ -n "$version" ]; then
        venv="${PYLANCE_VENVS:-$root/target/venvs}/pylance-$version"
    else
        venv="$root/.venv"
        create_version="14.0.2"
    fi
fi
create_version="${version:-${create_version:-}}"
if [ ! -x "$venv/bin/python" ]; then
    [ -n "$create_version" ] || setup_error "no venv at $venv (pass --version V to create one)"
    echo "run.sh: creating $venv with pylance==$create_version" >&2
    python3 -m venv "$venv" || setup_error "cannot create a venv at $venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "pylance==$create_version" pyarrow ||
        setup_error "cannot install pylance==$create_version into $venv"
fi
python="$venv/bin/python"

# ---- the gates
gate_vars=(LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES LANCE_ENABLE_UNSTABLE_SPILLED_ROW_LINEAGE)
case "$gates" in
    on) for g in "${gate_vars[@]}"; do export "$g=1"; done ;;
    off) for g in "${gate_vars[@]}"; do unset "$g"; done ;;
esac

# ---- what this pylance supports here (also the import check)
described="$("$python" "$here/testee.py" --describe)" ||
    setup_error "$python cannot run adapters/pylance/testee.py (pylance or pyarrow missing or broken)"
read -r installed gate_state capabilities < <("$python" -c '
import json, sys
d = json.loads(sys.argv[1])
gated = [g for g in d["gates"] if g["env"]]
on = [g["env_set"] for g in gated]
state = "none" if not gated else "on" if all(on) else "off" if not any(on) else "mixed"
print(d["implementation"]["version"], state, ",".join(d["capabilities"]))
' "$described")
if [ -n "$version" ] && [ "$installed" != "$version" ]; then
    setup_error "$venv holds pylance $installed, not $version"
fi
echo "run.sh: pylance $installed ($venv), gates: $gate_state, capabilities: $capabilities" >&2

# ---- the known failures
prefix=""
[ "$role" = writer ] && prefix="writer-"
suffix=""
[ -n "$file_version" ] && [ "$file_version" != 2.0 ] && suffix="-$file_version"
if [ -z "$known" ]; then
    case "$gate_state" in
        on | none) known="$here/known-failures/$prefix$installed$suffix.txt" ;;
        off) known="$here/known-failures/$prefix$installed-gates-off$suffix.txt" ;;
        mixed) setup_error "pylance $installed has some gates set and some not; pass --gates on|off or --known-failures FILE" ;;
    esac
    if [ ! -f "$known" ] && ! has_arg --update-known-failures "$@"; then
        # An empty list, so that the runner prints every failing case as a line to add.
        echo "run.sh: no known-failures file $known; running with an empty one, whose 'update /dev/null' lines belong in it (or pass --update-known-failures to write it; adapters/pylance/README.md)" >&2
        known=/dev/null
    fi
elif [ ! -r "$known" ]; then
    setup_error "no known-failures file $known"
fi

# ---- the runner
runner="${LANCE_CONFORMANCE:-$root/target/release/lance-conformance}"
if [ ! -x "$runner" ] && [ -z "${LANCE_CONFORMANCE:-}" ]; then
    cargo build --release --bin lance-conformance || setup_error "cannot build the runner"
    runner="${CARGO_TARGET_DIR:-$root/target}/release/lance-conformance"
fi
[ -x "$runner" ] || setup_error "no runner binary at $runner"
"$runner" --version 2>/dev/null | grep -q '^lance-conformance' || setup_error "$runner is not lance-conformance"

# The handshake cannot say which gates were on, so the run is labelled for the reports.
label=()
name="pylance $installed"
[ "$role" = writer ] && name="pylance $installed writer"
[ -n "$file_version" ] && name="$name, data file $file_version"
if ! has_arg --label "$@"; then
    case "$gate_state" in
        none) label=(--label "$name") ;;
        *) label=(--label "$name, gates $gate_state") ;;
    esac
fi

testee_cmd="$(printf '%q %q' "$python" "$here/testee.py")"
if [ "$role" = writer ]; then
    case ",$capabilities," in
        *,write:create,*) ;;
        *) setup_error "pylance $installed declares no write: capability (adapters/pylance/writer.py writes with 14.x only)" ;;
    esac
    version_arg=()
    [ -n "$file_version" ] && version_arg=(--data-file-version "$file_version")
    exec "$runner" run --writer-cmd "$testee_cmd" "${version_arg[@]}" --known-failures "$known" "${label[@]}" "$@"
fi
exec "$runner" run --reader-cmd "$testee_cmd" --known-failures "$known" "${label[@]}" "$@"

