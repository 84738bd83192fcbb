"""Answers `setup` with `unsupported`, as an adapter whose queue runs on
PostgreSQL only does on the check's SQLite setup: nothing after it would
be exercised, so the check tells the user to give `--db`."""

from common import ok, serve


def answer(request):
    if request["op"] == "setup" and request["database"] is None:
        return {"seq": request["seq"], "reply": "error", "kind": "unsupported",
                "message": "this queue runs on PostgreSQL only"}
    return ok(request)


serve(answer)
