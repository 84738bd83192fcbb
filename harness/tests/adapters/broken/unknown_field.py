"""Adds a field the protocol does not have to its heartbeat reply."""
import common


def answer(request):
    reply = common.ok(request)
    if request["op"] == "heartbeat":
        reply["elapsed_ms"] = 3
    return reply


common.serve(answer)
