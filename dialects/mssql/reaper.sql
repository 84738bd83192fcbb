-- SQL Server: the reaper. last_seen = COALESCE(heartbeat_at, updated_at);
-- the scan floor is DATEADD(second, -30, :now); every comparison is strict
-- and made between datetime2 values, exact to the microsecond.
--
-- Traps avoided:
-- - No DATEDIFF(second, last_seen, :now) > 30: DATEDIFF counts the second
--   boundaries crossed, not the time elapsed (12:00:00.999 to 12:00:01.000
--   is "1 second"), so any threshold on it is off by up to a second either
--   way. Shifting :now with DATEADD and comparing instants has no such
--   rounding.
-- - DATEADD on a datetime2 argument returns datetime2 (on a datetime it
--   would return datetime, rounded to 1/300 s); :now is bound as datetime2.
-- - Each UPDATE re-checks the scanned row (status, attempts, staleness), so
--   a row that beat, finished or was re-claimed after the scan is left alone
--   and not counted.
-- - The queue list is one comma-separated text (queue names hold no comma),
--   matched by CHARINDEX(',' + queue + ',', ',' + :queues + ','): the
--   delimiters make a trailing space part of the text searched, where
--   queue IN (...) would find 'mail ' equal to 'mail' (= pads under every
--   collation). The list takes the binary collation explicitly: in the
--   database's default collation it could raise "cannot resolve the
--   collation conflict" or match without case. (No STRING_SPLIT either: it
--   needs compatibility level 130.)
-- - Keys compared with a bound value also compare DATALENGTH (schema.sql).

-- name: reap_scan
SELECT id, class, attempts, max_retries, claim_timeout,
       CAST(CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END AS bigint) AS has_beat
  FROM jobs
 WHERE status = N'processing'
   AND COALESCE(heartbeat_at, updated_at) < DATEADD(second, -30, :now)
   AND (:all_queues = 1 OR CHARINDEX(N',' + queue + N',', N',' + :queues + N',' COLLATE Latin1_General_BIN2) > 0)
 ORDER BY id

-- name: legacy_reap_scan
SELECT id, class, attempts, max_retries, claim_timeout, CAST(0 AS bigint) AS has_beat
  FROM jobs
 WHERE status = N'processing'
   AND updated_at < DATEADD(second, -30, :now)
   AND (:all_queues = 1 OR CHARINDEX(N',' + queue + N',', N',' + :queues + N',' COLLATE Latin1_General_BIN2) > 0)
 ORDER BY id

-- name: reap_retry
UPDATE jobs
   SET status = N'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_retry
UPDATE jobs
   SET status = N'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_interrupt
UPDATE jobs
   SET status = N'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE jobs
   SET status = N'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_fail
UPDATE jobs
   SET status = N'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_fail
UPDATE jobs
   SET status = N'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = N'timeout'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND attempts = :attempts
   AND updated_at < :cutoff
