"""A minimal, correct adapter of the reapcheck protocol, version 1, for the
broken adapters beside it: each imports `serve` and breaks one rule.

Not a queue: it answers every request with a plausible fixed result. Only
the protocol is under test (harness/tests/adapter_check.rs)."""

import json
import sys

HANDSHAKE = {
    "protocol_version": 1,
    "adapter": {"name": "broken-adapter", "version": "0", "language": "python 3"},
    "queue": {"name": "none", "version": "0"},
    "capabilities": {"features": [], "split_reap": False, "clocks": ["app"]},
}

EMPTY = {}


def result(request):
    """The ok result a correct adapter could give to `request`."""
    op = request["op"]
    if op == "handshake":
        return HANDSHAKE
    if op == "clock":
        return {"app": request["now"], "database": None}
    if op == "claim":
        return {"result": "claimed"}
    if op == "heartbeat":
        return {"result": "ok"}
    if op in ("complete", "fail"):
        return {"result": "fenced", "lease_lost": False}
    if op in ("reap", "apply"):
        return {"changed": 1}
    if op == "scan":
        return {"candidates": []}
    if op == "read":
        return {"jobs": [], "leases": [], "hooks": []}
    return EMPTY


def ok(request):
    return {"seq": request["seq"], "reply": "ok", "result": result(request)}


def serve(answer=ok):
    """Reads request lines; `answer(request)` returns the reply object, a
    ready line (str), or None to write nothing."""
    for line in sys.stdin:
        request = json.loads(line)
        reply = answer(request)
        if reply is None:
            continue
        sys.stdout.write(reply if isinstance(reply, str) else json.dumps(reply))
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
