"""Answers reap with a reply kind the protocol does not have."""
import common


def answer(request):
    if request["op"] == "reap":
        return {"seq": request["seq"], "reply": "partial", "result": {"changed": 1}}
    return common.ok(request)


common.serve(answer)
