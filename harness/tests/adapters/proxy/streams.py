"""A proxy adapter for harness/tests/adapter_run.rs and adapter_check.rs,
in front of the adapter named by its arguments (the reference adapter,
which declares `streamed`). It appends each request's `op` to `requests`
in its working folder (with the job and token, for a request about one).
Of each scenario it answers nothing until it holds the first `HOLD`
requests (from `setup` on; the environment's `HOLD`, 5 by default): only
a client that sends that many ahead of the replies gets past that. It answers a `claim` of job `a` `not_claimable`,
so a later worker step on a's latest attempt has no label and is never
sent; a claim of any other job claims it, so a worker step on its latest
attempt is sent with the label that claim gave."""

import json
import os
import subprocess
import sys

hold = int(os.environ.get("HOLD", "5"))

child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
log = open("requests", "a")


def answer(line):
    child.stdin.write(line)
    child.stdin.flush()
    reply = child.stdout.readline()
    request = json.loads(line)
    if request.get("op") == "claim" and request.get("job") == "a":
        answered = json.loads(reply)
        if answered.get("reply") == "ok":
            answered["result"]["result"] = "not_claimable"
            reply = json.dumps(answered) + "\n"
    sys.stdout.write(reply)
    sys.stdout.flush()


held = []
for line in sys.stdin:
    request = json.loads(line)
    op = request.get("op")
    log.write(" ".join([op] + [request[k] for k in ("job", "token") if k in request]) + "\n")
    log.flush()
    if op == "setup":
        held = [line]
    elif held:
        held.append(line)
        if len(held) == hold:
            for request in held:
                answer(request)
            held = []
    else:
        answer(line)
