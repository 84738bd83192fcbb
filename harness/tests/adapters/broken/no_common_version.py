"""Speaks only protocol version 2, and says so as the protocol asks."""
import common


def answer(request):
    if request["op"] == "handshake":
        return {"seq": request["seq"], "reply": "error", "kind": "unsupported", "message": "speaks version 2 only"}
    return common.ok(request)


common.serve(answer)
