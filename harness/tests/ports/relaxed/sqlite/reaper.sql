-- Port: a queue that leaves claim_token on finished rows and scans (so fires
-- hooks) in table order.
-- SQLite: the reaper. last_seen = COALESCE(heartbeat_at, updated_at); the
-- scan floor is 30 s (30000000 microseconds); every comparison is strict.
-- Each UPDATE re-checks the scanned row (status, attempts, staleness), so a
-- row that beat, finished or was re-claimed after the scan is left alone.

-- name: reap_scan
SELECT id, class, attempts, max_retries, claim_timeout,
       CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END AS has_beat
  FROM jobs
 WHERE status = 'processing'
   AND COALESCE(heartbeat_at, updated_at) < :now - 30000000
   AND (:all_queues = 1 OR instr(',' || :queues || ',', ',' || queue || ',') > 0)

-- name: legacy_reap_scan
SELECT id, class, attempts, max_retries, claim_timeout, 0 AS has_beat
  FROM jobs
 WHERE status = 'processing'
   AND updated_at < :now - 30000000
   AND (:all_queues = 1 OR instr(',' || :queues || ',', ',' || queue || ',') > 0)

-- name: reap_retry
UPDATE jobs
   SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_retry
UPDATE jobs
   SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_interrupt
UPDATE jobs
   SET status = 'interrupted', failed_at = :now, updated_at = :now,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE jobs
   SET status = 'interrupted', failed_at = :now, updated_at = :now,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff
