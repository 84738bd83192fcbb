-- tinyqueue on PostgreSQL: its own table and column names, its own status
-- words, INT counters and instants as timestamp(0) without time zone
-- holding UTC, bound as naive UTC (dialect.toml: instants = naive_utc).
--
-- Column map (contract -> tinyqueue): id -> job_id, class -> kind,
-- queue -> lane, status -> state, attempts -> tries, max_retries ->
-- retry_limit, claim_timeout -> lock_timeout_s, claim_token -> lock_id,
-- heartbeat_at -> pinged_at, run_at -> due_at, updated_at -> touched_at,
-- completed_at -> finished_at, last_error -> error.
-- States: queued, running, done, dead, interrupted.

-- name: create_namespace
CREATE SCHEMA {namespace}

-- name: enter_namespace
SET search_path TO {namespace}

-- name: drop_namespace
DROP SCHEMA {namespace} CASCADE

-- name: set_time_zone
-- Naive timestamps bound as naive values meet no session time zone.
SELECT set_config('TimeZone', :zone, false)

-- name: schema
CREATE TABLE tq_jobs (
    job_id         TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    lane           TEXT NOT NULL DEFAULT 'default',
    state          TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'dead', 'interrupted')),
    tries          INT NOT NULL DEFAULT 0,
    retry_limit    INT NOT NULL DEFAULT 3,
    lock_timeout_s INT,
    lock_id        TEXT,
    pinged_at      timestamp(0),
    due_at         timestamp(0) NOT NULL,
    touched_at     timestamp(0) NOT NULL,
    failed_at      timestamp(0),
    finished_at    timestamp(0),
    error          TEXT
);
CREATE INDEX tq_jobs_running ON tq_jobs (state, lane);

-- name: legacy_schema
-- tinyqueue 0.x, before it had pinged_at.
CREATE TABLE tq_jobs (
    job_id         TEXT PRIMARY KEY,
    kind           TEXT NOT NULL,
    lane           TEXT NOT NULL DEFAULT 'default',
    state          TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'dead', 'interrupted')),
    tries          INT NOT NULL DEFAULT 0,
    retry_limit    INT NOT NULL DEFAULT 3,
    lock_timeout_s INT,
    lock_id        TEXT,
    due_at         timestamp(0) NOT NULL,
    touched_at     timestamp(0) NOT NULL,
    failed_at      timestamp(0),
    finished_at    timestamp(0),
    error          TEXT
);
CREATE INDEX tq_jobs_running ON tq_jobs (state, lane);

-- name: insert_job
-- The harness speaks the contract's status words; tinyqueue stores its own.
INSERT INTO tq_jobs (job_id, kind, lane, state, tries, retry_limit, lock_timeout_s, lock_id,
                     pinged_at, due_at, touched_at)
VALUES (:id, :class, :queue,
        CASE :status WHEN 'pending' THEN 'queued' WHEN 'processing' THEN 'running'
                     WHEN 'completed' THEN 'done' WHEN 'failed' THEN 'dead' ELSE :status END,
        :attempts, :max_retries, :claim_timeout, :claim_token, :heartbeat_at, :run_at, :updated_at)

-- name: legacy_insert_job
INSERT INTO tq_jobs (job_id, kind, lane, state, tries, retry_limit, lock_timeout_s, lock_id,
                     due_at, touched_at)
VALUES (:id, :class, :queue,
        CASE :status WHEN 'pending' THEN 'queued' WHEN 'processing' THEN 'running'
                     WHEN 'completed' THEN 'done' WHEN 'failed' THEN 'dead' ELSE :status END,
        :attempts, :max_retries, :claim_timeout, :claim_token, :run_at, :updated_at)

-- name: read_jobs
SELECT job_id,
       CASE state WHEN 'queued' THEN 'pending' WHEN 'running' THEN 'processing'
                  WHEN 'done' THEN 'completed' WHEN 'dead' THEN 'failed' ELSE state END,
       tries, lock_id, pinged_at, due_at, touched_at, failed_at, finished_at, error
  FROM tq_jobs ORDER BY job_id COLLATE "C"

-- name: legacy_read_jobs
SELECT job_id,
       CASE state WHEN 'queued' THEN 'pending' WHEN 'running' THEN 'processing'
                  WHEN 'done' THEN 'completed' WHEN 'dead' THEN 'failed' ELSE state END,
       tries, lock_id, NULL, due_at, touched_at, failed_at, finished_at, error
  FROM tq_jobs ORDER BY job_id COLLATE "C"
