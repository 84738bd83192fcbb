#!/usr/bin/env python3
"""Hand test of adapter.py: a fixed sequence of requests, and checks of what
comes back (shapes, and a few outcomes SAQ's code must produce). Needs the
PostgreSQL of REAPCHECK_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test).
Exit 0 when every check holds; drops its namespace at the end.

    python3 examples/adapters/saq/smoke.py
"""
import json, os, subprocess, sys, time

import psycopg

URL = os.environ.get("REAPCHECK_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
NS = f"saq_smoke_{os.getpid()}"
T0 = "2026-01-15T12:00:00.000000Z"
CLS = {"timeout": 3600, "idempotent": True, "heartbeat_grace": None, "max_retries": 3, "base_delay": 2,
       "max_delay": 3600, "exclusive": False, "concurrency_key": None, "loadable": True}


def job(id, status, attempts, updated, heartbeat=None, token=None):
    return {"id": id, "class": "Work", "queue": "default", "status": status, "attempts": attempts, "max_retries": 3,
            "claim_timeout": 3600 if status == "processing" else None, "claim_token": token,
            "concurrency_key": None, "heartbeat_at": heartbeat, "run_at": T0, "updated_at": updated}


REQUESTS = [
    {"op": "handshake", "protocol_versions": [1], "reapcheck": "0.1.0"},
    {"op": "setup", "scenario": "smoke", "namespace": NS, "database": {"target": "postgres", "url": URL},
     "now": T0, "app_time_zone": os.environ.get("TZ", "UTC"), "session_time_zone": None, "schema": "standard",
     "settings": {"heartbeat_grace": 300}, "classes": {"Work": CLS},
     "jobs": [job("dead", "processing", 1, "2026-01-15T11:00:00.000000Z", "2026-01-15T11:50:00.000000Z", "dead/1"),
              job("live", "processing", 1, "2026-01-15T11:58:00.000000Z", None, "live/1"),
              job("new", "pending", 0, T0), job("done", "completed", 1, "2026-01-15T11:00:00.000000Z")],
     "leases": []},
    {"op": "clock", "now": T0},
    {"op": "claim", "job": "new", "token": "new/1"},
    {"op": "claim", "job": "done", "token": "done/2"},
    {"op": "heartbeat", "job": "live", "token": "live/1"},
    {"op": "reap", "timeout": None, "queues": None},
    {"op": "complete", "job": "live", "token": "live/1"},
    {"op": "fail", "job": "new", "token": "new/1"},
    {"op": "complete", "job": "live", "token": "live/1"},
    {"op": "read"},
    {"op": "set", "heartbeat_grace": 0},
    {"op": "teardown"},
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.Popen([sys.executable, os.path.join(here, "adapter.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    replies, failures = [], []
    try:
        for seq, req in enumerate(REQUESTS, 1):
            started = time.monotonic()
            proc.stdin.write(json.dumps({"seq": seq, **req}) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            print(f"{req['op']:>9} {time.monotonic() - started:5.2f}s  {json.dumps(reply)[:160]}")
            if reply.get("seq") != seq:
                failures.append(f"{req['op']}: seq {reply.get('seq')} is not {seq}")
            replies.append(reply)
        proc.stdin.close()
        proc.wait(5)
    finally:
        proc.kill()
        with psycopg.connect(URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{NS}" CASCADE')

    def expect(i, what, ok):
        if not ok:
            failures.append(f"{REQUESTS[i]['op']} (#{i + 1}): {what}: {json.dumps(replies[i])[:300]}")

    expect(0, "handshake names saq and protocol 1",
           replies[0].get("result", {}).get("protocol_version") == 1 and replies[0]["result"]["queue"]["name"] == "saq")
    for i in (1, 5, 12):
        expect(i, "ok", replies[i].get("reply") == "ok")
    expect(2, "both clocks read the instant set", replies[2].get("result") == {"app": T0, "database": T0})
    expect(3, "a due pending job is claimed", replies[3].get("result") == {"result": "claimed"})
    expect(4, "a completed job is not claimable", replies[4].get("result") == {"result": "not_claimable"})
    expect(6, "the silent job is swept", replies[6].get("result") == {"changed": 1})
    expect(7, "complete is ok", replies[7].get("result") == {"result": "ok", "lease_lost": False})
    expect(8, "fail is ok", replies[8].get("result") == {"result": "ok", "lease_lost": False})
    expect(9, "a finished attempt is refused", replies[9].get("kind") == "refused")
    expect(11, "set is unsupported", replies[11].get("kind") == "unsupported")
    jobs = {j["id"]: j for j in replies[10].get("result", {}).get("jobs", [])}
    keys = {"id", "status", "attempts", "claim_token", "heartbeat_at", "run_at", "updated_at", "failed_at",
            "completed_at", "last_error", "raw"}
    expect(10, "every job with every field", set(jobs) == {"dead", "live", "new", "done"}
           and all(set(j) == keys for j in jobs.values()))
    if set(jobs) == {"dead", "live", "new", "done"}:
        expect(10, "swept job pending with last_error timeout",
               (jobs["dead"]["status"], jobs["dead"]["last_error"], jobs["dead"]["run_at"]) == ("pending", "timeout", T0))
        expect(10, "live completed", jobs["live"]["status"] == "completed" and jobs["live"]["completed_at"] == T0)
        expect(10, "failed job back to pending with attempts 1",
               (jobs["new"]["status"], jobs["new"]["attempts"], jobs["new"]["last_error"]) == ("pending", 1, "failed"))
        hooks = replies[10]["result"]["hooks"]
        expect(10, "one worker-fail hook", hooks == [{"job": "new", "attempt": 1, "final": False, "error": "failed"}])
    for f in failures:
        print("FAIL", f)
    print("smoke:", "ok" if not failures else f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
