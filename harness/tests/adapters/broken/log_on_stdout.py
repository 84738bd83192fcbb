"""Prints a log line on stdout before its reply to setup."""
import common


def answer(request):
    if request["op"] == "setup":
        return "INFO creating tables in " + request["namespace"]
    return common.ok(request)


common.serve(answer)
