-- PostgreSQL: the tables, the scenario's private schema, and the session
-- time zone.
--
-- Instants are `timestamptz` (microsecond precision, the default and the
-- finest PostgreSQL has), bound and read back in the binary protocol as UTC
-- microseconds. Traps avoided:
-- * `timestamp` (without time zone) would convert every bound `timestamptz`
--   through the session TimeZone on the way in, so the same scenario would
--   store different instants under `America/New_York` and under UTC.
-- * `timestamptz(0)` or `(3)` would round, not truncate, fractional seconds:
--   a heartbeat at -29.9999995 s could land on the other side of a cutoff.
-- * `now()`/`CURRENT_TIMESTAMP` are never used: the harness owns the clock.
-- * Counters are `bigint` so that they decode as the contract's 64-bit
--   integers without a silent widening from `integer`.

-- name: create_namespace
CREATE SCHEMA {namespace}

-- name: enter_namespace
-- The schema alone, without `public`: an unqualified `jobs` can only be this
-- scenario's table, never a leftover one in `public`.
SET search_path TO {namespace}

-- name: drop_namespace
DROP SCHEMA {namespace} CASCADE

-- name: empty_namespace
-- Between two scenarios on one connection, which keeps its namespace and
-- tables (every table `schema` and `legacy_schema` create must be here).
-- DELETE, not TRUNCATE: for a scenario's handful of rows DELETE took a third of
-- TRUNCATE's time here (TRUNCATE makes new files for both tables), and it
-- keeps the tables' prepared statements valid.
DELETE FROM jobs;
DELETE FROM job_leases

-- name: set_time_zone
-- Bound, not formatted into the text (SET cannot take a parameter). Note
-- that PostgreSQL reads a bare `+05:30` as a POSIX zone, which means five
-- and a half hours WEST of Greenwich: one more reason no outcome may depend
-- on the session zone.
SELECT set_config('TimeZone', :zone, false)

-- name: schema
CREATE TABLE jobs (
    id            text PRIMARY KEY,
    class         text NOT NULL,
    queue         text NOT NULL DEFAULT 'default',
    status        text NOT NULL,
    attempts      bigint NOT NULL DEFAULT 0,
    max_retries   bigint NOT NULL DEFAULT 3,
    claim_timeout bigint,
    claim_token   text,
    heartbeat_at  timestamptz,
    run_at        timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    failed_at     timestamptz,
    completed_at  timestamptz,
    last_error    text
);
CREATE INDEX jobs_reap ON jobs (status, queue);
-- jobs_stale serves reap_scan, which every worker's poll runs: only the
-- processing rows, ordered by last_seen, so the scan reads the stale ones
-- and nothing else however many finished rows the table holds. EXPLAIN
-- shows an Index Scan (a Bitmap Index Scan on small tables) on jobs_stale
-- with `Index Cond: (COALESCE(heartbeat_at, updated_at) < ...)`, in the
-- generic plan too (what a prepared scan may get after five runs). Without
-- it the scan reads every processing row through jobs_reap (8.1x slower at
-- 1M rows than at 10k, issue 13); with it 0.93x, generic 0.95x.
-- `reapcheck bench --scale` measures it.
CREATE INDEX jobs_stale ON jobs (COALESCE(heartbeat_at, updated_at)) WHERE status = 'processing';
CREATE TABLE job_leases (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            text PRIMARY KEY,
    class         text NOT NULL,
    queue         text NOT NULL DEFAULT 'default',
    status        text NOT NULL,
    attempts      bigint NOT NULL DEFAULT 0,
    max_retries   bigint NOT NULL DEFAULT 3,
    claim_timeout bigint,
    claim_token   text,
    run_at        timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    failed_at     timestamptz,
    completed_at  timestamptz,
    last_error    text
);
CREATE INDEX jobs_reap ON jobs (status, queue);
-- As jobs_stale in `schema`, on the only instant this table has.
CREATE INDEX jobs_stale ON jobs (updated_at) WHERE status = 'processing';
CREATE TABLE job_leases (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamptz NOT NULL
);
