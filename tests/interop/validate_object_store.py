#!/usr/bin/env python3
"""`lance-conformance validate` of tables on an S3-compatible object store.

Starts moto's S3 server (PyPI `moto[server]`) on 127.0.0.1, uploads the pylance-written tables
of check_reference_datasets.py to a bucket with boto3, and runs `validate s3://bucket/<name>
--format json` on each with the usual environment (`AWS_ENDPOINT`, `AWS_ALLOW_HTTP`, keys,
region). Each remote report must equal the report of the same table on the local disk
(verdicts, versions, commits, findings; only the table's name differs), so listing, sizes and
ranged reads through `object_store` give exactly the bytes the file system gives. `scan
s3://bucket/<name> --format json` must print the same bytes as `scan` of the local copy.

The same tables are then validated once more through a proxy on 127.0.0.1 that answers the
first request for each object with `503 SlowDown`: the reports must not change, and the proxy
must have refused at least one request per table, so the retries that made them equal are
object_store's own. A URI with no table under it must not validate clean.

Usage (from the repository root):

    cargo build --release -p lance-conformance --features object-store
    python3 tests/interop/validate_object_store.py --bin target/release/lance-conformance
"""

import argparse
import http.client
import http.server
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading

os.environ.setdefault("LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES", "1")
sys.path.insert(0, os.path.dirname(__file__))

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

from check_reference_datasets import lance_written  # noqa: E402

BUCKET = "lance-tables"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FlakyProxy(http.server.ThreadingHTTPServer):
    """Forwards to `upstream`; the first request for each path gets 503 SlowDown."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.seen = set()
        self.refused = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), FlakyHandler)


class FlakyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def forward(self):
        key = (self.command, self.path)
        with self.server.lock:
            first = key not in self.server.seen
            self.server.seen.add(key)
            if first:
                self.server.refused += 1
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if first:
            payload = b"<Error><Code>SlowDown</Code><Message>try again</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        conn = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
        conn.request(self.command, self.path, body=body, headers=headers)
        r = conn.getresponse()
        data = r.read()
        self.send_response(r.status)
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "content-length", "server", "date"):
                self.send_header(k, v)
        # A HEAD answer has no body: its length is the object's, as upstream said.
        length = r.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
        self.send_header("Content-Length", length or "0")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        conn.close()

    do_GET = forward
    do_HEAD = forward


def upload(client, root, prefix):
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            key = prefix + "/" + os.path.relpath(path, root).replace(os.sep, "/")
            client.upload_file(path, BUCKET, key)


def validate(binary, target, env=None):
    r = subprocess.run(
        [binary, "validate", target, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    report = json.loads(r.stdout) if r.stdout.strip() else None
    return r.returncode, report, r.stderr


def scan(binary, target, env=None):
    r = subprocess.run(
        [binary, "scan", target, "--format", "json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return r.returncode, r.stdout


def comparable(report):
    out = dict(report)
    out.pop("dataset", None)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/lance-conformance")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    proxy = FlakyProxy(port)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    failures = []
    try:
        keys = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
        }
        client = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", **{
            "aws_access_key_id": keys["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": keys["AWS_SECRET_ACCESS_KEY"],
            "region_name": keys["AWS_REGION"],
        })
        client.create_bucket(Bucket=BUCKET)
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        direct = dict(base, **keys, AWS_ENDPOINT=f"http://127.0.0.1:{port}", AWS_ALLOW_HTTP="true")
        flaky = dict(direct, AWS_ENDPOINT=f"http://127.0.0.1:{proxy.server_address[1]}")
        with tempfile.TemporaryDirectory() as work:
            tables = lance_written(work)
            judged = 0
            for path in tables:
                name = os.path.basename(path.rstrip("/"))
                upload(client, path, f"tables/{name}")
                local = validate(binary, path)
                if local[1] is None:
                    failures.append(f"{name}: local validate printed no report: {local[2][:300]}")
                    continue
                uri = f"s3://{BUCKET}/tables/{name}"
                for how, env in (("direct", direct), ("through 503s", flaky)):
                    before = proxy.refused
                    remote = validate(binary, uri, env)
                    if remote[1] is None:
                        failures.append(f"{name} ({how}): no report, exit {remote[0]}: {remote[2][:300]}")
                        continue
                    if remote[0] != local[0] or comparable(remote[1]) != comparable(local[1]):
                        failures.append(
                            f"{name} ({how}): exit {remote[0]} vs local {local[0]}; reports differ:\n"
                            f"  remote {json.dumps(comparable(remote[1]))[:600]}\n"
                            f"  local  {json.dumps(comparable(local[1]))[:600]}"
                        )
                        continue
                    if how == "through 503s" and proxy.refused == before:
                        failures.append(f"{name}: the proxy refused nothing, so no retry was tested")
                        continue
                    refused = proxy.refused - before
                    note = f", {refused} requests answered 503 first" if refused else ""
                    print(
                        f"ok {name} ({how}): exit {remote[0]}, {len(remote[1]['versions'])} versions, "
                        f"{len(remote[1]['findings'])} findings{note}"
                    )
                    judged += 1
                # `scan` reads the newest version through the same seam: the rows printed
                # from the bucket are the bytes printed from the local copy.
                here, there = scan(binary, path), scan(binary, uri, direct)
                if here[0] != 0 or there != here:
                    failures.append(
                        f"{name} (scan): exit {there[0]} vs local {here[0]}; "
                        f"{'output differs' if there[1] != here[1] else 'same output'}"
                    )
                else:
                    print(f"ok {name} (scan): {len(here[1])} bytes, the same from the bucket")
                    judged += 1
            # A missing table is not a finding: exit 2 ("cannot judge"), as for a local path
            # that does not exist.
            missing = validate(binary, f"s3://{BUCKET}/tables/no-such-table", direct)
            absent = validate(binary, os.path.join(work, "no-such-table"))
            if missing[0] != 2 or absent[0] != 2:
                failures.append(
                    f"a missing table exits {missing[0]} remotely and {absent[0]} locally, not 2"
                )
            else:
                print(f"ok no-such-table: exit {missing[0]} remotely and locally")
                judged += 1
    finally:
        proxy.shutdown()
        server.stop()
    for f in failures:
        print(f"FAIL {f}")
    print(f"object store: {judged} passed, {len(failures)} failed")
    return 1 if failures or judged == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
