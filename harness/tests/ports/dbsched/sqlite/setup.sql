-- SQLite: the contract's setup rows mapped onto scheduled_tasks.
--
-- Only pending and processing rows exist: the queue deletes a finished
-- execution, so a completed, failed or interrupted row is not inserted.
-- A processing row was picked, and picking writes the heartbeat: its
-- last_heartbeat is its last beat, else the instant it was picked
-- (updated_at). consecutive_failures counts the runs before this one (all
-- of which died or failed, or the row would be gone); version starts at
-- the attempt count.

-- name: insert_job
INSERT INTO scheduled_tasks (task_instance, task_name, execution_time, picked, picked_by,
                             last_heartbeat, consecutive_failures, version)
SELECT :id, :class, :run_at,
       CASE WHEN :status = 'processing' THEN 1 ELSE 0 END,
       :claim_token,
       CASE WHEN :status = 'processing' THEN COALESCE(:heartbeat_at, :updated_at) ELSE :heartbeat_at END,
       CASE WHEN :status = 'processing' THEN :attempts - 1 ELSE :attempts END,
       :attempts
 WHERE :status IN ('pending', 'processing')
