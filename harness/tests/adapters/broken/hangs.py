"""Never answers read (waits for ever, as a deadlocked adapter would)."""
import time

import common


def answer(request):
    if request["op"] == "read":
        while True:
            time.sleep(60)
    return common.ok(request)


common.serve(answer)
