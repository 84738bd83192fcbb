-- tinyqueue on SQLite: the reaper. last_seen is IFNULL(pinged_at,
-- touched_at), in epoch seconds, so the 30 s scan floor is `- 30`. The
-- scan returns two columns more than the contract's six (ignored).

-- name: reap_scan
SELECT job_id, kind, tries, retry_limit, lock_timeout_s, pinged_at IS NOT NULL, lane, touched_at
  FROM tq_jobs
 WHERE state = 'running'
   AND IFNULL(pinged_at, touched_at) < :now - 30
   AND (:all_queues = 1 OR instr(',' || :queues || ',', ',' || lane || ',') > 0)
 ORDER BY job_id

-- name: legacy_reap_scan
SELECT job_id, kind, tries, retry_limit, lock_timeout_s, 0, lane, touched_at
  FROM tq_jobs
 WHERE state = 'running'
   AND touched_at < :now - 30
   AND (:all_queues = 1 OR instr(',' || :queues || ',', ',' || lane || ',') > 0)
 ORDER BY job_id

-- name: reap_retry
UPDATE tq_jobs
   SET state = 'queued', due_at = :run_at, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND IFNULL(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_retry
UPDATE tq_jobs
   SET state = 'queued', due_at = :run_at, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff

-- name: reap_interrupt
UPDATE tq_jobs
   SET state = 'interrupted', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND IFNULL(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE tq_jobs
   SET state = 'interrupted', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff

-- name: reap_fail
UPDATE tq_jobs
   SET state = 'dead', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND IFNULL(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_fail
UPDATE tq_jobs
   SET state = 'dead', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff
