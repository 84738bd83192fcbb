-- PostgreSQL: a queue designed like db-scheduler. ONE table, with the
-- queue's own columns only; nothing in it exists for reapcheck.
--
--   task_instance         the execution's id (the contract's job id)
--   task_name             the task, i.e. the job's class
--   execution_time        when it may run next (the contract's run_at)
--   picked, picked_by     taken by a scheduler; picked_by is the claim token
--   last_heartbeat        written when picked and at each heartbeat
--   consecutive_failures  failed or dead runs in a row
--   version               bumped when picked and when rescheduled or
--                         revived, never by a heartbeat: the row's fence
--
-- A completed execution is deleted. There is no queue column, no retry
-- limit, no per-attempt timeout, no error text and no updated_at.
-- Instants are timestamptz (microseconds), as dialects/postgres stores
-- them; counters bigint; ids ordered with the "C" collation (byte order).

-- name: create_namespace
CREATE SCHEMA {namespace}

-- name: enter_namespace
SET search_path TO {namespace}

-- name: drop_namespace
DROP SCHEMA {namespace} CASCADE

-- name: empty_namespace
DELETE FROM scheduled_tasks

-- name: set_time_zone
SELECT set_config('TimeZone', :zone, false)

-- name: schema
CREATE TABLE scheduled_tasks (
    task_instance        text        PRIMARY KEY,
    task_name            text        NOT NULL,
    execution_time       timestamptz NOT NULL,
    picked               boolean     NOT NULL,
    picked_by            text,
    last_heartbeat       timestamptz,
    consecutive_failures bigint      NOT NULL DEFAULT 0,
    version              bigint      NOT NULL
);
CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time);
CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat);
