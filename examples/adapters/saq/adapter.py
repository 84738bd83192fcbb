#!/usr/bin/env python3
"""reapcheck adapter (protocol version 1) for SAQ's PostgreSQL queue.

Reads one JSON request a line on stdin, writes one reply a line on stdout;
logs go to stderr. Every step runs SAQ's own code: `claim` is a real
`Worker.process()` (its dequeue, its `job.update(status=ACTIVE)`), a
heartbeat is `job.update()` (SAQ's documented heartbeat), `complete`/`fail`
let that same `Worker.process()` call finish or raise, and `reap` is
`PostgresQueue.sweep()`. See README.md for the mapping and the policy.
"""
import asyncio, itertools, json, logging, math, sys, time, traceback, zlib
from datetime import datetime, timedelta, timezone
from importlib.metadata import version

from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool
from saq import Job, Status, Worker
from saq.queue.postgres import PostgresQueue

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
log = logging.getLogger("saq-adapter")
UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# --- the clock -------------------------------------------------------------
# SAQ reads time only through time.time() (saq.utils.now/now_seconds, and
# time.time() in PostgresQueue._retry); asyncio's timers use time.monotonic,
# which stays real. The instant <-> epoch conversions are the two functions
# below and nothing else (tests/dst_copy.sh patches exactly these).
_now = [time.time()]
time.time = lambda: _now[0]


def to_epoch(instant: datetime) -> float:  # CLOCK-TO-EPOCH
    return instant.timestamp()


def from_epoch(seconds: float) -> datetime:  # CLOCK-FROM-EPOCH
    return EPOCH + timedelta(seconds=seconds)


def parse(text): return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z")
def show(instant): return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ") if instant else None
def ms(value): return from_epoch(value / 1000) if value else None  # SAQ's job stamps are epoch ms, 0 = unset


class Refused(Exception):
    """The queue's guard said no; nothing was written."""


class Unsupported(Exception):
    """SAQ cannot do this at all."""


class Attempt:
    """One worker attempt: its own `Worker` (id = the attempt label) running
    `process()` for one job; the job function waits on `outcome`."""

    def __init__(self, label, queue, functions, hooks):
        self.label, self.job, self.started = label, None, asyncio.get_running_loop().create_future()
        self.outcome = asyncio.get_running_loop().create_future()
        self.worker = Worker(queue, functions, id=label, concurrency=1, dequeue_timeout=0.05,
                             poll_interval=1.0, after_process=self.after_process)
        self.task, self.hooks = None, hooks

    async def after_process(self, ctx):  # SAQ's hook after every process(); a raise is a failure
        if "exception" in ctx:
            job = ctx["job"]
            self.hooks.append({"job": job.key, "attempt": job.attempts,
                               "final": job.status == Status.FAILED, "error": "failed"})


class Scenario:
    """One scenario's pool, queues, attempts and hooks, inside `namespace`."""

    def __init__(self, req):
        self.ns, self.req = req["namespace"], req
        self.keyspace = zlib.crc32(self.ns.encode()) & 0x7FFFFFFF  # SAQ's advisory locks, per namespace
        # synchronous_commit=off: commits do not wait for the WAL flush (durability
        # after a server crash only; nothing a scenario can see), ~7 ms a commit here.
        options = f"-c search_path={self.ns},pg_catalog -c synchronous_commit=off"
        if req["session_time_zone"]:
            options += f" -c TimeZone={req['session_time_zone']}"
        self.pool = AsyncConnectionPool(req["database"]["url"], open=False, min_size=2, max_size=8,
                                        kwargs={"autocommit": True, "options": options})
        self.queues, self.sweepers, self.attempts, self.hooks = {}, {}, {}, []
        self.jobs = {j["id"]: j for j in req["jobs"]}
        self.priority = {key: i for i, key in enumerate(sorted(self.jobs))}
        self.functions = [(name, self.run) for name in req["classes"]]

    async def run(self, ctx, **_):
        """The job function of every class: waits for the scenario's verdict."""
        attempt = self.attempts[ctx["worker"].id]
        attempt.job = ctx["job"]
        attempt.started.set_result(None)
        return await attempt.outcome

    async def open(self):
        url = self.req["database"]["url"]
        async with await AsyncConnection.connect(url, autocommit=True) as conn:
            s = sql.Identifier(self.ns)
            await conn.execute(sql.SQL("CREATE SCHEMA {}").format(s))
            # The database clock route: now() in the namespace, searched before pg_catalog.
            await conn.execute(sql.SQL("CREATE TABLE {}.reapcheck_clock (t timestamptz NOT NULL)").format(s))
            await conn.execute(sql.SQL("INSERT INTO {}.reapcheck_clock VALUES (%s)").format(s),
                               [parse(self.req["now"])])
            for fn in ("now", "clock_timestamp", "statement_timestamp", "transaction_timestamp"):
                await conn.execute(sql.SQL("CREATE FUNCTION {}.{}() RETURNS timestamptz LANGUAGE sql STABLE "
                                           "AS 'SELECT t FROM {}.reapcheck_clock'").format(
                    s, sql.Identifier(fn), s))
        await self.pool.open()
        if len(self.jobs) > 32768:
            raise Unsupported("the adapter claims one job by giving it its own SAQ priority (a SMALLINT)")

    async def queue(self, job_id):
        """A PostgresQueue that dequeues only this job: its own priority range."""
        if job_id not in self.queues:
            p = self.priority[job_id]
            q = PostgresQueue(pool=self.pool, name=self.jobs[job_id]["queue"], priorities=(p, p),
                              saq_lock_keyspace=self.keyspace)
            await q.connect()  # SAQ's own migrations (init_db), under the namespace's search path
            self.queues[job_id] = q
        return self.queues[job_id]

    async def sweeper(self, name):
        if name not in self.sweepers:
            self.sweepers[name] = PostgresQueue(pool=self.pool, name=name, saq_lock_keyspace=self.keyspace)
            await self.sweepers[name].connect()
        return self.sweepers[name]

    def grace(self, cls):
        own = self.req["classes"][cls]["heartbeat_grace"]
        return own if own is not None else self.grace_app

    async def setup(self):
        self.grace_app = self.req["settings"]["heartbeat_grace"]
        await self.open()
        await self.sweeper("default")
        # Rows are independent, so the rows of one instant are written together
        # (at most 8 at a time); the clock moves between instants only.
        gate = asyncio.Semaphore(8)

        async def gated(coro):
            async with gate:
                return await coro
        for field, write in (("updated_at", self.place), ("heartbeat_at", self.beat)):
            rows = sorted((j for j in self.req["jobs"] if j[field]), key=lambda j: j[field])
            for instant, group in itertools.groupby(rows, key=lambda j: j[field]):
                set_clock(parse(instant))
                await asyncio.gather(*(gated(write(j)) for j in group))
        set_clock(parse(self.req["now"]))

    async def place(self, j):
        """Enqueues row `j` at its `updated_at`; claims a processing row there."""
        cls, status = self.req["classes"][j["class"]], j["status"]
        processing, run_at = status == "processing", math.ceil(to_epoch(parse(j["run_at"])))
        timeout = (j["claim_timeout"] or 0) if processing else cls["timeout"]
        q = await self.queue(j["id"])
        job = Job(function=j["class"], key=j["id"], timeout=max(timeout, 0), heartbeat=max(self.grace(j["class"]), 0),
                  retries=j["max_retries"], ttl=0, retry_delay=1e-6, priority=self.priority[j["id"]],
                  attempts=j["attempts"] - (1 if processing else 0), scheduled=0 if processing else run_at)
        await q.enqueue(job)
        if processing:  # claimed by its attempt through SAQ's worker (due at once: scheduled 0)
            attempt = await self.claim(j["id"], j["claim_token"])
            assert attempt is not None, f"setup could not claim {j['id']}"
            await attempt.job.update(scheduled=run_at)  # the row's own run_at, as SAQ's update writes it
        elif status != "pending":  # a state SAQ's update() writes, with no completion stamp
            saq_status = {"completed": Status.COMPLETE, "failed": Status.FAILED, "interrupted": Status.ABORTED}[status]
            await q.update(job, status=saq_status, error="interrupted" if status == "interrupted" else None)

    async def beat(self, j):
        """The setup attempt of processing row `j` beats at its `heartbeat_at`."""
        if j["status"] == "processing":
            await self.attempts[j["claim_token"]].job.update()

    async def claim(self, job_id, label):
        """Runs Worker.process(): None when SAQ's dequeue found nothing."""
        attempt = Attempt(label, await self.queue(job_id), self.functions, self.hooks)
        self.attempts[label] = attempt
        attempt.task = asyncio.create_task(attempt.worker.process())
        await asyncio.wait({attempt.task, attempt.started}, return_when=asyncio.FIRST_COMPLETED)
        if not attempt.started.done():
            del self.attempts[label]
            await attempt.task
            return None
        return attempt

    def live(self, label):
        attempt = self.attempts.get(label)
        if attempt is None or attempt.task.done():
            raise Refused(f"attempt {label} has no running Worker.process() (it finished or never started)")
        return attempt

    async def finish(self, label, error):
        attempt = self.live(label)
        if error:
            attempt.outcome.set_exception(RuntimeError("the scenario's fail step"))
        else:
            attempt.outcome.set_result(None)
        await attempt.task
        return {"result": "ok", "lease_lost": False}

    async def reap(self, queues):
        if queues is None:
            async with self.pool.connection() as conn:
                queues = [r[0] for r in await (await conn.execute("SELECT DISTINCT queue FROM saq_jobs")).fetchall()]
        changed = 0
        for name in sorted(queues):
            # abort=-1: do not wait (wall time) for a live worker to acknowledge the
            # abort; in a scenario none will (Python 3.11's wait_for gives up at once).
            changed += len(await (await self.sweeper(name)).sweep(abort=-1))
        return {"changed": changed}

    async def read(self):
        async with self.pool.connection() as conn:
            rows = await (await conn.execute("SELECT key, job, status, scheduled, queue FROM saq_jobs ORDER BY key")).fetchall()
        jobs = []
        for key, blob, status, scheduled, queue in rows:
            job = json.loads(blob)
            active = status in ("active", "aborting")
            finished = status in ("complete", "failed", "aborted")
            error = job.get("error")
            kind = "timeout" if error == "swept" else "failed" if (error or "").startswith("Traceback") else None
            swept_out = status == "aborted" and error == "swept"
            jobs.append({
                "id": key,
                "status": {"new": "pending", "queued": "pending", "active": "processing", "aborting": "processing",
                           "complete": "completed", "failed": "failed",
                           "aborted": "failed" if swept_out else "interrupted"}[status],
                "attempts": job.get("attempts", 0),
                "claim_token": job.get("worker_id") if active else None,
                "heartbeat_at": show(ms(job.get("touched"))) if active else None,
                "run_at": show(from_epoch(scheduled)),
                "updated_at": show(ms(job.get("started") if active else job.get("touched") or job.get("queued"))),
                "failed_at": show(ms(job.get("completed"))) if finished and status != "complete" else None,
                "completed_at": show(ms(job.get("completed"))) if status == "complete" else None,
                "last_error": kind,
                "raw": {"status": status, "scheduled": scheduled, "queue": queue,
                        **{k: v for k, v in job.items() if k not in ("error", "kwargs")},
                        "error": (error or "")[:80] or None}})
        return {"jobs": jobs, "leases": [], "hooks": list(self.hooks)}

    async def teardown(self):
        for attempt in self.attempts.values():  # the scenario's zombie workers end here
            if not attempt.task.done():
                attempt.task.cancel()
        await asyncio.gather(*(a.task for a in self.attempts.values()), return_exceptions=True)
        await self.pool.close()


def set_clock(instant):
    _now[0] = to_epoch(instant)


async def db_clock(scenario, instant):
    async with scenario.pool.connection() as conn:
        await conn.execute("UPDATE reapcheck_clock SET t = %s", [instant])
        return (await (await conn.execute("SELECT now()")).fetchone())[0]


HANDSHAKE = {
    "protocol_version": 1,
    "adapter": {"name": "saq-adapter", "version": "1.0.0", "language": f"python {sys.version_info[0]}.{sys.version_info[1]}"},
    "queue": {"name": "saq", "version": version("saq")},
    "capabilities": {"features": ["worker_fail", "hooks"], "split_reap": False, "clocks": ["app", "database"],
                     "time_resolution": "1ms"},
    "policy": {
        "scan_floor": {"value": "none", "reason": "PostgresQueue.sweep reads every active job of its queue and asks job.stuck"},
        "claim_window": {"value": "none", "reason": "the dequeue writes job.touched, the stamp job.heartbeat is measured from, so a claim starts the heartbeat clock"},
        "grace_off": {"value": "never", "reason": "required with claim_window = none; SAQ's heartbeat = 0 turns the heartbeat test off, leaving only job.timeout (see README)"},
        "grace_floor": {"value": "none", "reason": "job.stuck uses job.heartbeat as it is, with no smallest value"},
        "retry": {"value": "immediate", "reason": "SAQ's backoff always adds random jitter, so the adapter uses a fixed retry_delay of 1 us: a swept job is due at once"},
        "non_idempotent": {"value": "retry", "reason": "SAQ has no notion of idempotency: a swept job is retried when job.retryable"},
        "retry_count": {"value": "max_attempts", "reason": "Job.retries is the most attempts: job.retryable is retries > attempts"},
        "fence": {"value": "none", "reason": "a worker's job.update() and finish() write the row by key whatever attempt holds it"},
    },
    "state": {"absent": {"value": ["heartbeat_at"], "reason": "SAQ keeps one job.touched stamp, written by the claim, every heartbeat and every state change; no heartbeat column apart from the last write"}},
}


async def handle(state, req):
    op = req["op"]
    if op == "handshake":
        if 1 not in req["protocol_versions"]:
            raise Unsupported("this adapter speaks protocol version 1 only")
        return HANDSHAKE
    if op == "setup":
        if req["schema"] != "standard":
            raise Unsupported("SAQ has one table layout; there is no legacy schema")
        if req["database"] is None or req["database"]["target"] != "postgres":
            raise Unsupported("this adapter runs SAQ's PostgresQueue; give it the postgres target")
        state["s"] = Scenario(req)
        await state["s"].setup()
        return {}
    s = state.get("s")
    if s is None and op not in ("teardown", "set"):
        raise Unsupported(f"no scenario is set up (setup was refused or not sent), so there is nothing to {op}")
    if op == "clock":
        instant = parse(req["now"])
        set_clock(instant)
        return {"app": show(from_epoch(time.time())), "database": show(await db_clock(s, instant))}
    if op == "claim":
        return {"result": "claimed" if await s.claim(req["job"], req["token"]) else "not_claimable"}
    if op == "heartbeat":
        await s.live(req["token"]).job.update()
        return {"result": "ok"}
    if op in ("complete", "fail"):
        return await s.finish(req["token"], op == "fail")
    if op == "reap":
        return await s.reap(req["queues"])
    if op == "read":
        return await s.read()
    if op == "teardown":
        if s:
            await s.teardown()
        state.pop("s", None)
        return {}
    if op == "set":
        raise Unsupported("SAQ has no app-wide grace: job.heartbeat is written into each job when it is enqueued")
    raise Unsupported(f"SAQ's sweep has no place to stop between its read and its writes ({op})")


def main():
    loop, state = asyncio.new_event_loop(), {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            reply = {"seq": req["seq"], "reply": "ok", "result": loop.run_until_complete(handle(state, req))}
        except Refused as e:
            reply = {"seq": req["seq"], "reply": "error", "kind": "refused", "message": str(e)}
        except Unsupported as e:
            reply = {"seq": req["seq"], "reply": "error", "kind": "unsupported", "message": str(e)}
        except Exception as e:
            log.exception("%s failed", req.get("op"))
            reply = {"seq": req["seq"], "reply": "error", "kind": "exception", "message": f"{type(e).__name__}: {e}",
                     "traceback": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    if "s" in state:
        loop.run_until_complete(state["s"].teardown())


if __name__ == "__main__":
    main()
