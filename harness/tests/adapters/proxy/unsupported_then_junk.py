"""A proxy adapter for harness/tests/adapter_run.rs, in front of the
adapter named by its arguments (the reference adapter, which declares
`streamed`). It answers the first `reap` `unsupported`, and the request
after it (already sent, streamed) with a line that is not a reply. The
skip must not hide the broken line: the scenario fails."""

import json
import subprocess
import sys

child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
state = "before"
for line in sys.stdin:
    child.stdin.write(line)
    child.stdin.flush()
    reply = child.stdout.readline()
    request = json.loads(line)
    if state == "before" and request.get("op") == "reap":
        reply = json.dumps({"seq": request["seq"], "reply": "error", "kind": "unsupported", "message": "no reap"}) + "\n"
        state = "junk"
    elif state == "junk":
        reply = "INFO: reaping is not supported\n"
        state = "after"
    sys.stdout.write(reply)
    sys.stdout.flush()
