-- MySQL and MariaDB: the reaper. last_seen = COALESCE(heartbeat_at,
-- updated_at), a stored generated column of `jobs` (schema.sql) that the
-- scan compares so that its index serves it; the scan floor is 30 s below
-- :now; every comparison is strict. Each UPDATE re-checks the scanned row (status, attempts,
-- staleness), so a row that beat, finished or was re-claimed after the scan
-- is left alone.
--
-- `CAST(:now AS DATETIME(6))` before interval arithmetic: the type and
-- fractional digits of `? - INTERVAL 30 SECOND` follow how the server types
-- the parameter, which differs (MariaDB types it from the bound value when
-- it executes; MySQL 8.0.22+ derives parameter types when it prepares the
-- statement), and a type without six fractional digits would drop the
-- microseconds. The cast makes it DATETIME(6) on both servers.
--
-- The queue filter: :queues is the queue names joined by commas (a queue
-- name may not hold a comma; scenarios refuse one). FIND_IN_SET compares
-- as bytes here because `queue` is VARBINARY, so 'A' and 'a ' do not match
-- 'a'. `||` is avoided everywhere: it is OR unless sql_mode has
-- PIPES_AS_CONCAT (which sqlx adds, and other clients do not).
--
-- has_beat is cast to SIGNED so it comes back as a BIGINT on both servers,
-- whatever type each gives a CASE of integer literals.
--
-- Both scans name their index (FORCE INDEX (jobs_stale)): the plan must read
-- the stale rows alone at any table size, and InnoDB's statistics of a
-- freshly filled table are recomputed in the background, so without the
-- hint the optimizer sometimes chose a full scan of a small table (PRIMARY
-- KEY order). Seen in `reapcheck mutate --db mariadb`: the drop-ORDER-BY
-- mutant of legacy_reap_scan survived one run in four, killed only when
-- the plan went through the index.

-- name: reap_scan
SELECT id, class, attempts, max_retries, claim_timeout,
       CAST(CASE WHEN heartbeat_at IS NULL THEN 0 ELSE 1 END AS SIGNED) AS has_beat
  FROM jobs FORCE INDEX (jobs_stale)
 WHERE status = 'processing'
   AND last_seen < CAST(:now AS DATETIME(6)) - INTERVAL 30 SECOND
   AND (:all_queues = 1 OR FIND_IN_SET(queue, :queues) > 0)
 ORDER BY id

-- name: legacy_reap_scan
SELECT id, class, attempts, max_retries, claim_timeout, CAST(0 AS SIGNED) AS has_beat
  FROM jobs FORCE INDEX (jobs_stale)
 WHERE status = 'processing'
   AND updated_at < CAST(:now AS DATETIME(6)) - INTERVAL 30 SECOND
   AND (:all_queues = 1 OR FIND_IN_SET(queue, :queues) > 0)
 ORDER BY id

-- name: reap_retry
UPDATE jobs
   SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_retry
UPDATE jobs
   SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_interrupt
UPDATE jobs
   SET status = 'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_interrupt
UPDATE jobs
   SET status = 'interrupted', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff

-- name: reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND COALESCE(heartbeat_at, updated_at) < :cutoff

-- name: legacy_reap_fail
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = 'timeout', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND attempts = :attempts
   AND updated_at < :cutoff
