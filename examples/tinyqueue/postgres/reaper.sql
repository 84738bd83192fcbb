-- tinyqueue on PostgreSQL: the reaper. last_seen is COALESCE(pinged_at,
-- touched_at), naive UTC timestamps compared with naive bound values. The
-- scan returns two columns more than the contract's six (ignored), and
-- has_beat as a plain int.

-- name: reap_scan
SELECT job_id, kind, tries, retry_limit, lock_timeout_s, CASE WHEN pinged_at IS NULL THEN 0 ELSE 1 END, lane, touched_at
  FROM tq_jobs
 WHERE state = 'running'
   AND COALESCE(pinged_at, touched_at) < :now - interval '30 seconds'
   AND (:all_queues = 1 OR lane = ANY (string_to_array(:queues, ',')))
 ORDER BY job_id COLLATE "C"

-- name: legacy_reap_scan
SELECT job_id, kind, tries, retry_limit, lock_timeout_s, 0, lane, touched_at
  FROM tq_jobs
 WHERE state = 'running'
   AND touched_at < :now - interval '30 seconds'
   AND (:all_queues = 1 OR lane = ANY (string_to_array(:queues, ',')))
 ORDER BY job_id COLLATE "C"

-- name: reap_retry
UPDATE tq_jobs
   SET state = 'queued', due_at = :run_at, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND COALESCE(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_retry
UPDATE tq_jobs
   SET state = 'queued', due_at = :run_at, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff

-- name: reap_interrupt
UPDATE tq_jobs
   SET state = 'interrupted', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND COALESCE(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE tq_jobs
   SET state = 'interrupted', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff

-- name: reap_fail
UPDATE tq_jobs
   SET state = 'dead', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts
   AND COALESCE(pinged_at, touched_at) < :cutoff

-- name: legacy_reap_fail
UPDATE tq_jobs
   SET state = 'dead', failed_at = :now, touched_at = :now, lock_id = NULL, error = 'timeout'
 WHERE job_id = :id AND state = 'running' AND tries = :attempts AND touched_at < :cutoff
