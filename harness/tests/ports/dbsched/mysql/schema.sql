-- MySQL and MariaDB: a queue designed like db-scheduler. ONE table, with
-- the queue's own columns only; nothing in it exists for reapcheck.
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
-- Instants are DATETIME(6) holding UTC and text is VARBINARY (byte order,
-- never padded), as dialects/mysql stores them. No column is added to make
-- a matched row a changed row: a second heartbeat at the same instant
-- changes nothing, and counts 1 only because sqlx sets CLIENT_FOUND_ROWS
-- (the queue's JDBC driver reports matched rows too, useAffectedRows=false).

-- name: create_namespace
CREATE DATABASE {namespace} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin

-- name: enter_namespace
USE {namespace};
SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES')

-- name: drop_namespace
DROP DATABASE {namespace}

-- name: empty_namespace
DELETE FROM scheduled_tasks

-- name: set_time_zone
SET time_zone = :zone

-- name: schema
CREATE TABLE scheduled_tasks (
    task_instance        VARBINARY(255) NOT NULL PRIMARY KEY,
    task_name            VARBINARY(255) NOT NULL,
    execution_time       DATETIME(6)    NOT NULL,
    picked               BOOLEAN        NOT NULL,
    picked_by            VARBINARY(255) NULL,
    last_heartbeat       DATETIME(6)    NULL,
    consecutive_failures BIGINT         NOT NULL DEFAULT 0,
    version              BIGINT         NOT NULL,
    INDEX execution_time_idx (execution_time),
    INDEX last_heartbeat_idx (last_heartbeat)
) ENGINE = InnoDB STATS_PERSISTENT = 0
