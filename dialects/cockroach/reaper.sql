-- CockroachDB: the reaper. last_seen = COALESCE(heartbeat_at, updated_at);
-- every comparison is strict and made between two TIMESTAMPTZ values.
-- Each UPDATE re-checks the scanned row (status, attempts, staleness), so a
-- row that beat, finished or was re-claimed after the scan is left alone.
--
-- Traps avoided (those of dialects/postgres/reaper.sql, and):
-- * The scan floor is an interval of seconds only; `- interval '1 day'`
--   would follow the session time zone's DST, as in PostgreSQL.
-- * has_beat is cast to INT8 explicitly: a CASE of literals is `INT`, whose
--   width follows the `default_int_size` session setting.
-- * Ids are ordered with no COLLATE: CockroachDB compares an uncollated
--   STRING by its bytes (its key encoding), which is Rust's order already.
--   `COLLATE "C"` is PostgreSQL's spelling of byte order; in CockroachDB a
--   COLLATE clause makes a collated-string type compared by ICU rules, which
--   is not wanted here.
-- * string_to_array and `= ANY` behave as in PostgreSQL; queue names are
--   validated non-empty and free of commas, so the split is unambiguous.

-- name: reap_scan
SELECT id, class, attempts, max_retries, claim_timeout,
       CAST(CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END AS INT8) AS has_beat
  FROM jobs
 WHERE status = 'processing'
   AND COALESCE(heartbeat_at, updated_at) < :now - interval '30 seconds'
   AND (:all_queues = 1 OR queue = ANY (string_to_array(:queues, ',')))
 ORDER BY id

-- name: legacy_reap_scan
SELECT id, class, attempts, max_retries, claim_timeout, CAST(0 AS INT8) AS has_beat
  FROM jobs
 WHERE status = 'processing'
   AND updated_at < :now - interval '30 seconds'
   AND (:all_queues = 1 OR queue = ANY (string_to_array(:queues, ',')))
 ORDER BY id

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
