"""Answers complete with an error kind the protocol does not have."""
import common


def answer(request):
    if request["op"] == "complete":
        return {"seq": request["seq"], "reply": "error", "kind": "timeout", "message": "worker gone"}
    return common.ok(request)


common.serve(answer)
