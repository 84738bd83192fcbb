#!/usr/bin/env python3
"""reapcheck adapter (protocol v1) for procrastinate 3.10.0 on PostgreSQL.

Drives procrastinate's own code: JobManager.register_worker / fetch_job (the
worker's claim), JobManager.update_heartbeat (the worker's heartbeat),
Worker._process_job (the worker's completion / failure path, with the task's
RetryStrategy), and the documented stalled-job recipe
(JobManager.get_stalled_jobs + JobManager.retry_job) as the reaper.

Clocks: procrastinate.utils.utcnow is patched (app clock); now() & co. are
shadowed by functions in the namespace schema that read a one-row table
(database clock), created before procrastinate's schema is applied.

Written by a stranger to reapcheck from README.md and
docs/adapter-protocol.md alone (about 12 minutes, see README.md here).
"""
import asyncio
import datetime as dt
import json
import sys
import time
import traceback

import psycopg
import procrastinate
from procrastinate import job_context, retry as retry_mod, utils, worker as worker_mod

UTC = dt.timezone.utc
_NOW = [dt.datetime.now(tz=UTC)]


def fake_utcnow():
    return _NOW[0]


utils.utcnow = fake_utcnow  # the queue's application clock

STATUS_OUT = {"todo": "pending", "doing": "processing", "succeeded": "completed",
              "failed": "failed", "aborted": "interrupted", "cancelled": "failed"}
STATUS_IN = {"pending": "todo", "processing": "doing", "completed": "succeeded",
             "failed": "failed", "interrupted": "aborted"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def parse_instant(s):
    if s is None:
        return None
    return dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def fmt(d):
    if d is None:
        return None
    return d.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class AdapterError(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


class TaskFailed(Exception):
    pass


class Scenario:
    def __init__(self):
        self.app = None
        self.ns = None
        self.url = None
        self.grace = 300
        self.tokens = {}      # token -> {"job": rc id, "worker_id": int, "job_obj": Job}
        self.ids = {}         # rc id -> procrastinate id
        self.scans = {}       # reaper -> (now, [Job])
        self.outcome = {}     # rc id -> "ok" | "fail"
        self.conn = None

    async def sql(self, query, *params, fetch=True):
        if self.conn is None or self.conn.closed:
            self.conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True,
                                                              options=self.options)
        cur = await self.conn.execute(query, params or None)
        if fetch and cur.description:
            return await cur.fetchall()
        return None


S = None


def options_for(ns, session_tz):
    o = f"-c search_path={ns},pg_catalog"
    if session_tz:
        o += f" -c TimeZone={session_tz}"
    return o


async def op_setup(req):
    global S
    db = req["database"]
    if not db or db.get("target") != "postgres":
        on = db.get("target") if db else "sqlite"
        raise AdapterError("unsupported", f"procrastinate runs on PostgreSQL only, not {on}")
    url = db["url"]
    if req["schema"] != "standard":
        raise AdapterError("unsupported", "procrastinate has no legacy schema")
    S = Scenario()
    S.url = url
    S.ns = req["namespace"]
    S.options = options_for(S.ns, req["session_time_zone"])
    S.grace = req["settings"]["heartbeat_grace"]
    _NOW[0] = parse_instant(req["now"])
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{S.ns}"')
    # database clock: shadow now() & co. inside the namespace, before procrastinate's schema
    await S.sql(f'CREATE TABLE "{S.ns}".rc_clock (now timestamptz NOT NULL)', fetch=False)
    await S.sql(f'INSERT INTO "{S.ns}".rc_clock VALUES (%s)', _NOW[0], fetch=False)
    await S.sql(f"""
        CREATE FUNCTION "{S.ns}".now() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now FROM "{S.ns}".rc_clock';
        CREATE FUNCTION "{S.ns}".clock_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now FROM "{S.ns}".rc_clock';
        CREATE FUNCTION "{S.ns}".statement_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now FROM "{S.ns}".rc_clock';
        CREATE FUNCTION "{S.ns}".transaction_timestamp() RETURNS timestamptz LANGUAGE sql STABLE AS 'SELECT now FROM "{S.ns}".rc_clock';
    """, fetch=False)

    connector = procrastinate.PsycopgConnector(conninfo=url, kwargs={"options": S.options},
                                               min_size=1, max_size=2)
    app = procrastinate.App(connector=connector)
    S.app = app
    for name, cls in req["classes"].items():
        if not cls["loadable"]:
            continue  # the worker will not find the task (TaskNotFound)
        mr = cls["max_retries"]
        strat = retry_mod.RetryStrategy(max_attempts=mr) if mr > 0 else False

        def make(task_name):
            async def run(**kwargs):
                if S.outcome.get(kwargs.get("rc_id")) == "fail":
                    raise TaskFailed(f"{task_name} raised (reapcheck fail step)")
                return None
            return run
        app.task(name=name, retry=strat)(make(name))
    await app.open_async()
    await app.schema_manager.apply_schema_async()

    # the scenario's rows
    for j in req["jobs"]:
        job = app.tasks[j["class"]].configure(queue=j["queue"]) if j["class"] in app.tasks else None
        if job is None:
            # unloadable class: defer by name through the app's blueprint-free path
            jobs_ = procrastinate.jobs.Job(id=None, queue=j["queue"], lock=None, queueing_lock=None,
                                           task_name=j["class"], task_kwargs={"rc_id": j["id"]})
            pj = await app.job_manager.defer_job_async(jobs_)
            pid = pj.id
        else:
            pid = await job.defer_async(rc_id=j["id"])
        S.ids[j["id"]] = pid
        status = STATUS_IN[j["status"]]
        attempts = j["attempts"] - (1 if status == "doing" else 0)
        wid = None
        if status == "doing":
            beat = j["heartbeat_at"] or j["updated_at"]
            rows = await S.sql("INSERT INTO procrastinate_workers (last_heartbeat) VALUES (%s) RETURNING id",
                               parse_instant(beat))
            wid = rows[0][0]
            if j["claim_token"]:
                S.tokens[j["claim_token"]] = {"job": j["id"], "worker_id": wid, "job_obj": None}
        await S.sql("""UPDATE procrastinate_jobs SET status = %s, attempts = %s, scheduled_at = %s,
                       worker_id = %s WHERE id = %s""",
                    status, attempts, parse_instant(j["run_at"]), wid, pid, fetch=False)
        # the row's last write, as an event that sets no completed_at / failed_at
        # (the scenario's rows carry none)
        ev = {"todo": "deferred", "doing": "started"}.get(status, "deferred")
        await S.sql("DELETE FROM procrastinate_events WHERE job_id = %s", pid, fetch=False)
        await S.sql("INSERT INTO procrastinate_events (job_id, type, at) VALUES (%s, %s, %s)",
                    pid, ev, parse_instant(j["updated_at"]), fetch=False)
        if S.tokens.get(j["claim_token"] or ""):
            rows = await S.sql("SELECT id, status, task_name, priority, lock, queueing_lock, args, scheduled_at, queue_name, attempts, worker_id FROM procrastinate_jobs WHERE id = %s", pid)
            S.tokens[j["claim_token"]]["job_obj"] = job_from(rows[0])
    if req["leases"]:
        raise AdapterError("unsupported", "procrastinate has no leases")
    return {}


def job_from(r):
    cols = ["id", "status", "task_name", "priority", "lock", "queueing_lock", "args",
            "scheduled_at", "queue_name", "attempts", "worker_id"]
    return procrastinate.jobs.Job.from_row(dict(zip(cols, r)))


async def op_clock(req):
    now = parse_instant(req["now"])
    _NOW[0] = now
    await S.sql("UPDATE rc_clock SET now = %s", now, fetch=False)
    rows = await S.sql("SELECT now()")
    return {"app": fmt(utils.utcnow()), "database": fmt(rows[0][0])}


async def set_clocks(now):
    _NOW[0] = now
    await S.sql("UPDATE rc_clock SET now = %s", now, fetch=False)


async def op_claim(req):
    rc, token = req["job"], req["token"]
    pid = S.ids.get(rc)
    if pid is None:
        raise AdapterError("exception", f"unknown job {rc}")
    app = S.app
    # one procrastinate worker per attempt: it registers (its heartbeat starts) and fetches
    wid = await app.job_manager.register_worker()
    # fetch_job takes the first due job of the queues named; narrow it to job `rc` by
    # parking that one job alone in a private queue for the duration of the fetch
    rows = await S.sql("SELECT queue_name FROM procrastinate_jobs WHERE id = %s", pid)
    real_q = rows[0][0]
    tmpq = f"rc-claim-{pid}"
    await S.sql("UPDATE procrastinate_jobs SET queue_name = %s WHERE id = %s", tmpq, pid, fetch=False)
    try:
        job = await app.job_manager.fetch_job(queues=[tmpq], worker_id=wid)
    finally:
        await S.sql("UPDATE procrastinate_jobs SET queue_name = %s WHERE id = %s", real_q, pid, fetch=False)
    if job is None:
        await app.job_manager.unregister_worker(wid)
        return {"result": "not_claimable"}
    job = job.evolve(queue=real_q)
    S.tokens[token] = {"job": rc, "worker_id": wid, "job_obj": job}
    return {"result": "claimed"}


async def job_row(pid):
    rows = await S.sql("SELECT status, worker_id FROM procrastinate_jobs WHERE id = %s", pid)
    return rows[0] if rows else (None, None)


async def op_heartbeat(req):
    t = S.tokens.get(req["token"])
    if t is None:
        return {"result": "fenced"}
    pid = S.ids[t["job"]]
    status, wid = await job_row(pid)
    # procrastinate beats per worker, whatever the worker holds
    await S.app.job_manager.update_heartbeat(t["worker_id"])
    if status != "doing" or wid != t["worker_id"]:
        return {"result": "fenced"}
    return {"result": "ok"}


async def finish(req, outcome):
    t = S.tokens.get(req["token"])
    if t is None:
        return {"result": "fenced", "lease_lost": False}
    pid = S.ids[t["job"]]
    job = t["job_obj"]
    if job is None:
        rows = await S.sql("SELECT id, status, task_name, priority, lock, queueing_lock, args, scheduled_at, queue_name, attempts, worker_id FROM procrastinate_jobs WHERE id = %s", pid)
        job = job_from(rows[0])
    S.outcome[t["job"]] = outcome
    w = worker_mod.Worker(S.app, install_signal_handlers=False, listen_notify=False, wait=False)
    w.worker_id = t["worker_id"]
    ctx = job_context.JobContext(app=S.app, worker_name=w.worker_name, worker_queues=None,
                                 job=job, abort_reason=lambda: None, start_timestamp=time.time())
    try:
        await w._process_job(ctx)
    except Exception as e:  # procrastinate's finish/retry raised: nothing written
        cause = str(e.__cause__ or e)
        if "not found or" in cause or "invalid status" in cause:
            return {"result": "fenced", "lease_lost": False}
        raise
    return {"result": "ok", "lease_lost": False}


async def stalled(queues):
    seconds = S.grace
    if queues is None:
        return list(await S.app.job_manager.get_stalled_jobs(seconds_since_heartbeat=seconds))
    out = []
    for q in queues:
        out += list(await S.app.job_manager.get_stalled_jobs(queue=q, seconds_since_heartbeat=seconds))
    return out


def rc_of(job):
    return job.task_kwargs.get("rc_id")


async def retry_all(jobs):
    n = 0
    for job in sorted(jobs, key=lambda j: rc_of(j)):
        try:
            await S.app.job_manager.retry_job(job)
            n += 1
        except Exception as e:
            log("retry_job refused:", e)
    return n


async def op_reap(req):
    return {"changed": await retry_all(await stalled(req["queues"]))}


async def op_scan(req):
    jobs = await stalled(req["queues"])
    S.scans[req["reaper"]] = (_NOW[0], jobs)
    return {"candidates": sorted(rc_of(j) for j in jobs)}


async def op_apply(req):
    scan_now, jobs = S.scans.pop(req["reaper"])
    cur = _NOW[0]
    await set_clocks(scan_now)
    try:
        n = await retry_all(jobs)
    finally:
        await set_clocks(cur)
    return {"changed": n}


async def op_set(req):
    S.grace = req["heartbeat_grace"]
    return {}


async def op_read(req):
    rows = await S.sql("""
        SELECT j.id, j.args->>'rc_id', j.status::text, j.attempts, j.scheduled_at, j.worker_id,
               j.queue_name, w.last_heartbeat,
               (SELECT max(at) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type <> 'scheduled'),
               (SELECT max(at) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type IN ('succeeded', 'cancelled') AND j.status = 'succeeded'),
               (SELECT max(at) FROM procrastinate_events e WHERE e.job_id = j.id AND e.type IN ('failed', 'cancelled') AND j.status = 'failed')
          FROM procrastinate_jobs j LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
         ORDER BY j.args->>'rc_id'""")
    jobs = []
    for pid, rc, st, att, sched, wid, q, hb, upd, comp, failed in rows:
        token = None
        if st == "doing":
            for tk, t in S.tokens.items():
                if t["worker_id"] == wid and t["job"] == rc:
                    token = tk
        jobs.append({
            "id": rc, "status": STATUS_OUT[st],
            "attempts": att + (1 if st == "doing" else 0),
            "claim_token": token, "heartbeat_at": None,
            "run_at": fmt(sched), "updated_at": fmt(upd),
            "failed_at": fmt(failed), "completed_at": fmt(comp), "last_error": None,
            "raw": {"id": pid, "status": st, "attempts": att, "worker_id": wid, "queue_name": q,
                    "worker_last_heartbeat": fmt(hb), "scheduled_at": fmt(sched)},
        })
    return {"jobs": jobs, "leases": [], "hooks": []}


async def op_teardown(req):
    global S
    if S is not None:
        try:
            if S.conn is not None:
                await S.conn.close()
            await S.app.close_async()
        except Exception as e:
            log("close:", e)
        try:
            async with await psycopg.AsyncConnection.connect(S.url, autocommit=True) as conn:
                await conn.execute(f'DROP SCHEMA IF EXISTS "{S.ns}" CASCADE')
        except Exception as e:
            log("drop:", e)
    S = None
    return {}


def op_handshake(req):
    if 1 not in req["protocol_versions"]:
        raise AdapterError("unsupported", "speaks protocol 1 only")
    return {
        "protocol_version": 1,
        "adapter": {"name": "procrastinate-adapter", "version": "0.1.0",
                    "language": "python " + sys.version.split()[0]},
        "queue": {"name": "procrastinate", "version": procrastinate.__version__},
        "capabilities": {"features": ["worker_fail"], "split_reap": True,
                         "clocks": ["app", "database"]},
        "policy": {
            "claim_window": {"value": "none", "reason": "fetch_job hands the job to a worker whose heartbeat runs from its registration; stalled = worker heartbeat older than seconds_since_heartbeat, no job timeout"},
            "grace_off": {"value": "never", "reason": "there is no way to turn the heartbeat test off; seconds_since_heartbeat is always applied"},
            "grace_overrides": {"value": "app_only", "reason": "get_stalled_jobs takes one seconds_since_heartbeat for the whole app; tasks have no heartbeat setting"},
            "grace_floor": {"value": "none", "reason": "seconds_since_heartbeat is used as given"},
            "scan_floor": {"value": "none", "reason": "select_stalled_jobs_by_heartbeat has no floor besides the heartbeat test"},
            "retry": {"value": "immediate", "reason": "the documented stalled-job recipe calls retry_job(job) (retry_at = now); RetryStrategy(max_attempts=n) with no wait retries a raising task at once"},
            "non_idempotent": {"value": "retry", "reason": "procrastinate has no notion of an idempotent task"},
            "give_up": {"value": "never", "reason": "retry_job never looks at attempts; a stalled job is retried forever"},
            "fence": {"value": "none", "reason": "finish_job and retry_job check only status IN (todo, doing) (or doing, failed), never the worker"},
        },
        "state": {
            "absent": {"value": ["heartbeat_at", "last_error"],
                       "reason": "heartbeats are per worker (procrastinate_workers.last_heartbeat), not per job; no error is stored"},
        },
    }


OPS = {"setup": op_setup, "clock": op_clock, "claim": op_claim, "heartbeat": op_heartbeat,
       "complete": lambda r: finish(r, "ok"), "fail": lambda r: finish(r, "fail"),
       "reap": op_reap, "scan": op_scan, "apply": op_apply, "set": op_set, "read": op_read,
       "teardown": op_teardown}


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        try:
            req = json.loads(line)
            seq = req["seq"]
        except Exception as e:
            reply({"seq": 0, "reply": "error", "kind": "exception", "message": f"unreadable request: {e}"})
            continue
        op = req.get("op")
        try:
            if op == "handshake":
                res = op_handshake(req)
            elif op in OPS:
                if op != "setup" and op != "teardown" and S is None:
                    raise AdapterError("exception", f"{op} before setup")
                res = await OPS[op](req)
            else:
                raise AdapterError("exception", f"unknown op {op}")
            reply({"seq": seq, "reply": "ok", "result": res})
        except AdapterError as e:
            reply({"seq": seq, "reply": "error", "kind": e.kind, "message": e.message})
        except Exception as e:
            tb = traceback.format_exc()
            log(tb)
            reply({"seq": seq, "reply": "error", "kind": "exception", "message": str(e)[:2000], "traceback": tb[-8000:]})
    if S is not None:
        await op_teardown({})


if __name__ == "__main__":
    asyncio.run(main())
