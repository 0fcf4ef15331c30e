#!/usr/bin/env python3
"""A testee that misbehaves on purpose, for tests/runner/process.rs.

    misbehave.py MODE CASE PIDFILE REFERENCE_TESTEE...

Proxies every request to the reference testee (the remaining arguments, e.g.
`lance-conformance testee`), started as a child process, except that when a `scan` request
targets a dataset of case CASE it does what MODE says:

    crash    exit at once (status 3), without answering
    hang     never answer (sleep)
    garbage  answer with a line that is not JSON
    badseq   answer with the wrong seq
    two      answer with both `result` and `error`
    wrong    answer with the last row dropped
    noisy    write a megabyte to stderr, then answer correctly

Each start appends "<own pid> <child pid>" to PIDFILE, so the test can check that no process
outlives the run, and every request and response line goes to PIDFILE.log ("> " and "< "
prefixes), so the test can validate the traffic against spec/schemas/protocol. MODE `record`
changes nothing.
"""

import json
import subprocess
import sys
import time


def main():
    mode, case, pidfile = sys.argv[1], sys.argv[2], sys.argv[3]
    child = subprocess.Popen(sys.argv[4:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    import os

    with open(pidfile, "a") as f:
        f.write(f"{os.getpid()} {child.pid}\n")
    log = open(pidfile + ".log", "a")
    for line in sys.stdin:
        log.write("> " + line)
        log.flush()
        req = json.loads(line)
        target = req.get("cmd") == "scan" and f"/{case}/" in req.get("dataset", "")
        if target and mode == "crash":
            sys.exit(3)
        if target and mode == "hang":
            time.sleep(3600)
        if target and mode == "garbage":
            print("this is not a protocol response", flush=True)
            continue
        child.stdin.write(line)
        child.stdin.flush()
        resp = json.loads(child.stdout.readline())
        if target and mode == "badseq":
            resp["seq"] += 1
        if target and mode == "two":
            resp["error"] = {"class": "invalid", "message": "both"}
        if target and mode == "wrong" and "result" in resp:
            resp["result"]["rows"] = resp["result"]["rows"][:-1]
        if target and mode == "noisy":
            sys.stderr.write("x" * (1 << 20) + "\n")
            sys.stderr.flush()
        log.write("< " + json.dumps(resp) + "\n")
        log.flush()
        print(json.dumps(resp), flush=True)
        if req.get("cmd") == "stop":
            break


if __name__ == "__main__":
    main()
