"""Answers `claim` with an `exception`: the adapter's own code failed on a
step every queue has. A valid reply by the schema, but not an adapter
that the check can pass."""

from common import ok, serve


def answer(request):
    if request["op"] == "claim":
        return {"seq": request["seq"], "reply": "error", "kind": "exception",
                "message": "KeyError: 'a'", "traceback": "Traceback (most recent call last): ..."}
    return ok(request)


serve(answer)
