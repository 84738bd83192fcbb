-- tinyqueue on SQLite: a worker's side of an attempt. Every write is
-- fenced by the attempt's lock_id.

-- name: claim
UPDATE tq_jobs
   SET state = 'running', tries = tries + 1, touched_at = :now, lock_timeout_s = :claim_timeout,
       pinged_at = NULL, lock_id = :token
 WHERE job_id = :id AND state = 'queued' AND due_at <= :now

-- name: legacy_claim
UPDATE tq_jobs
   SET state = 'running', tries = tries + 1, touched_at = :now, lock_timeout_s = :claim_timeout,
       lock_id = :token
 WHERE job_id = :id AND state = 'queued' AND due_at <= :now

-- name: heartbeat
UPDATE tq_jobs SET pinged_at = :now WHERE job_id = :id AND state = 'running' AND lock_id = :token

-- name: legacy_heartbeat
UPDATE tq_jobs SET touched_at = :now WHERE job_id = :id AND state = 'running' AND lock_id = :token

-- name: complete
UPDATE tq_jobs
   SET state = 'done', finished_at = :now, touched_at = :now, lock_id = NULL
 WHERE job_id = :id AND state = 'running' AND lock_id = :token

-- name: read_attempt
SELECT tries, retry_limit FROM tq_jobs WHERE job_id = :id AND state = 'running' AND lock_id = :token

-- name: fail_retry
UPDATE tq_jobs
   SET state = 'queued', due_at = :run_at, touched_at = :now, lock_id = NULL, error = 'failed'
 WHERE job_id = :id AND state = 'running' AND lock_id = :token AND tries = :attempts

-- name: fail_final
UPDATE tq_jobs
   SET state = 'dead', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'failed'
 WHERE job_id = :id AND state = 'running' AND lock_id = :token AND tries = :attempts
