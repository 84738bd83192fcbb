-- PostgreSQL: the reaper. last_seen = COALESCE(heartbeat_at, updated_at);
-- every comparison is strict and made between two UTC `timestamp` values.
-- Each UPDATE re-checks the scanned row (status, attempts, staleness), so a
-- row that beat, finished or was re-claimed after the scan is left alone.
--
-- Traps avoided:
-- * The scan floor is `:now - interval '30 seconds'`: an interval of seconds
--   only. `timestamptz - interval '1 day'` (or months) is computed in the
--   session TimeZone and is 23 or 25 hours across a DST change.
-- * Ids are ordered with the "C" collation (byte order, as Rust orders
--   strings), not the database's locale, where `B` < `a` < `b` can differ.
-- * The queue list is split with string_to_array, never matched with LIKE,
--   whose `_` and `%` would match other queue names.

-- name: reap_scan
-- Two columns more than the contract's six, as the queue's own scan returns:
-- they come after the contract's and are ignored.
SELECT id, class, attempts, max_retries, claim_timeout,
       CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END AS has_beat, queue, status
  FROM jobs
 WHERE status = 'processing'
   AND COALESCE(heartbeat_at, updated_at) < :now - interval '30 seconds'
   AND (:all_queues = 1 OR queue = ANY (string_to_array(:queues, ',')))
 ORDER BY id COLLATE "C"

-- name: legacy_reap_scan
SELECT id, class, attempts, max_retries, claim_timeout, 0 AS has_beat, queue, status
  FROM jobs
 WHERE status = 'processing'
   AND updated_at < :now - interval '30 seconds'
   AND (:all_queues = 1 OR queue = ANY (string_to_array(:queues, ',')))
 ORDER BY id COLLATE "C"

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
   SET status = 'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE jobs
   SET status = 'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout'
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff
