-- SQLite: the tables, and the per-session settings SQLite does not have.
--
-- Instants are INTEGER microseconds since the Unix epoch, UTC. Integers
-- compare exactly and numerically, so no instant can be off by rounding or
-- sorted as text ('2026-01-15 12:00:00.5' < '2026-01-15 12:00:00Z' as text).
-- The tables are STRICT: a text value bound to an instant column is an
-- error, not a row that sorts after every integer (SQLite orders INTEGER
-- before TEXT, so COALESCE(heartbeat_at, updated_at) mixing the two would
-- silently compare wrong).

-- name: create_namespace
-- Nothing: every scenario runs in a new in-memory database of its own.

-- name: enter_namespace
-- Nothing: the connection is the scenario's own database.

-- name: drop_namespace
-- Nothing: the in-memory database goes with its connection.

-- name: empty_namespace
-- Between two scenarios on one connection, which keeps its namespace and
-- tables (every table `schema` and `legacy_schema` create must be here).
-- Without a WHERE, SQLite empties a table in one step.
DELETE FROM jobs;
DELETE FROM job_leases

-- name: set_time_zone
-- Nothing: SQLite has no session time zone; instants are UTC integers.

-- name: schema
CREATE TABLE jobs (
    id            TEXT PRIMARY KEY,
    class         TEXT NOT NULL,
    queue         TEXT NOT NULL DEFAULT 'default',
    status        TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_retries   INTEGER NOT NULL DEFAULT 3,
    claim_timeout INTEGER,
    claim_token   TEXT,
    heartbeat_at  INTEGER,
    run_at        INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    failed_at     INTEGER,
    completed_at  INTEGER,
    last_error    TEXT
) STRICT;
CREATE INDEX jobs_reap ON jobs (status, queue);
-- jobs_stale serves reap_scan, which every worker's poll runs: a partial
-- index of the processing rows on last_seen, so the scan reads the stale
-- ones and nothing else however many finished rows the table holds.
-- EXPLAIN QUERY PLAN shows `SEARCH jobs USING INDEX jobs_stale (<expr><?)`;
-- the query must spell the expression as the index does. Without it, after
-- ANALYZE, the scan read every processing row (88x slower at 1M rows than
-- at 10k, issue 13); with it 1.09x. `reapcheck bench --scale` measures it.
CREATE INDEX jobs_stale ON jobs (COALESCE(heartbeat_at, updated_at)) WHERE status = 'processing';
CREATE TABLE job_leases (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            TEXT PRIMARY KEY,
    class         TEXT NOT NULL,
    queue         TEXT NOT NULL DEFAULT 'default',
    status        TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_retries   INTEGER NOT NULL DEFAULT 3,
    claim_timeout INTEGER,
    claim_token   TEXT,
    run_at        INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    failed_at     INTEGER,
    completed_at  INTEGER,
    last_error    TEXT
) STRICT;
CREATE INDEX jobs_reap ON jobs (status, queue);
-- As jobs_stale in `schema`, on the only instant this table has.
CREATE INDEX jobs_stale ON jobs (updated_at) WHERE status = 'processing';
CREATE TABLE job_leases (
    name       TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
