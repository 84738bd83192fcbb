"""Exits with status 3 when asked to claim, as a crashed adapter would."""
import sys

import common


def answer(request):
    if request["op"] == "claim":
        sys.stderr.write("Traceback: claim crashed\n")
        sys.stderr.flush()
        sys.exit(3)
    return common.ok(request)


common.serve(answer)
