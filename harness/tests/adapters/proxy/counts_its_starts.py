"""A proxy adapter for harness/tests/adapter_run.rs: it appends its `TZ`
to `starts` in its working folder when it starts, then passes every line
to the adapter named by its other arguments (the reference adapter) and
back. With `strip` as its first argument it takes `sets_app_time_zone`
out of the handshake's capabilities, so reapcheck must start a new process
for every change of zone."""

import json
import os
import subprocess
import sys

strip = sys.argv[1] == "strip"
with open("starts", "a") as starts:
    starts.write(os.environ.get("TZ", "") + "\n")
child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    child.stdin.write(line)
    child.stdin.flush()
    reply = child.stdout.readline()
    if strip and json.loads(line).get("op") == "handshake":
        answer = json.loads(reply)
        del answer["result"]["capabilities"]["sets_app_time_zone"]
        reply = json.dumps(answer) + "\n"
    sys.stdout.write(reply)
    sys.stdout.flush()
