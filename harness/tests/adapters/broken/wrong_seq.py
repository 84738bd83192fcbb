"""Answers claim with the seq of the request before it."""
import common


def answer(request):
    reply = common.ok(request)
    if request["op"] == "claim":
        reply["seq"] = request["seq"] - 1
    return reply


common.serve(answer)
