-- SQLite: a queue designed like db-scheduler. ONE table, with the queue's
-- own columns only; nothing in it exists for reapcheck.
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
-- Instants are INTEGER microseconds since the Unix epoch, UTC, in a STRICT
-- table, as dialects/sqlite stores them; `picked` is 0 or 1.

-- name: create_namespace
-- Nothing: every scenario runs in a new in-memory database of its own.

-- name: enter_namespace
-- Nothing: the connection is the scenario's own database.

-- name: drop_namespace
-- Nothing: the in-memory database goes with its connection.

-- name: empty_namespace
DELETE FROM scheduled_tasks

-- name: set_time_zone
-- Nothing: SQLite has no session time zone; instants are UTC integers.

-- name: schema
CREATE TABLE scheduled_tasks (
    task_instance        TEXT    PRIMARY KEY,
    task_name            TEXT    NOT NULL,
    execution_time       INTEGER NOT NULL,
    picked               INTEGER NOT NULL,
    picked_by            TEXT,
    last_heartbeat       INTEGER,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    version              INTEGER NOT NULL
) STRICT;
CREATE INDEX execution_time_idx ON scheduled_tasks (execution_time);
CREATE INDEX last_heartbeat_idx ON scheduled_tasks (last_heartbeat);
