-- MySQL and MariaDB: a scheduler's side of an execution. Every write is
-- fenced by picked_by, the token of the pick that owns the execution.

-- name: claim
-- Picking writes the heartbeat: there is no separate claim window, and no
-- per-attempt timeout is stored (:claim_timeout is not kept).
UPDATE scheduled_tasks
   SET picked = 1, picked_by = :token, last_heartbeat = :now, version = version + 1
 WHERE task_instance = :id AND picked = 0 AND execution_time <= :now

-- name: heartbeat
-- Leaves version alone: a heartbeat is not a new state of the execution.
UPDATE scheduled_tasks SET last_heartbeat = :now
 WHERE task_instance = :id AND picked = 1 AND picked_by = :token

-- name: complete
-- A completed execution is deleted.
DELETE FROM scheduled_tasks
 WHERE task_instance = :id AND picked = 1 AND picked_by = :token

-- name: read_attempt
-- The failure handler's input: the row version (the fence of the writes
-- below) and no retry limit (the largest count: the table keeps none, and
-- the default failure handler reschedules every failure).
SELECT version, CAST(9223372036854775807 AS SIGNED) AS max_retries FROM scheduled_tasks
 WHERE task_instance = :id AND picked = 1 AND picked_by = :token

-- name: fail_retry
-- The failure handler reschedules at :run_at.
UPDATE scheduled_tasks
   SET picked = 0, picked_by = NULL, execution_time = :run_at,
       consecutive_failures = consecutive_failures + 1, version = version + 1
 WHERE task_instance = :id AND picked = 1 AND picked_by = :token AND version = :attempts

-- name: fail_final
-- A failure handler that gives up removes the execution.
DELETE FROM scheduled_tasks
 WHERE task_instance = :id AND picked = 1 AND picked_by = :token AND version = :attempts
