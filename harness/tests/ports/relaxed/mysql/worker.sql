-- Port: a queue that leaves claim_token on finished rows and scans (so fires
-- hooks) in table order.
-- MySQL and MariaDB: what a worker does with its attempt. Every write is
-- fenced by the attempt's claim token, so a worker that lost its job changes
-- nothing.
--
-- MySQL and MariaDB evaluate a single-table UPDATE's SET list left to
-- right, each assignment seeing the ones before it (standard SQL, and
-- MariaDB's SIMULTANEOUS_ASSIGNMENT mode, use the old values throughout).
-- No assignment here reads a column assigned before it, so both readings
-- agree. `row_version` makes every matched row a changed row (schema.sql).

-- name: claim
-- Only this attempt's beats count: the previous attempt's heartbeat_at goes.
UPDATE jobs
   SET status = 'processing', attempts = attempts + 1, updated_at = :now,
       claim_timeout = :claim_timeout, heartbeat_at = NULL, claim_token = :token,
       row_version = row_version + 1
 WHERE id = :id AND status = 'pending' AND run_at <= :now

-- name: legacy_claim
UPDATE jobs
   SET status = 'processing', attempts = attempts + 1, updated_at = :now,
       claim_timeout = :claim_timeout, claim_token = :token,
       row_version = row_version + 1
 WHERE id = :id AND status = 'pending' AND run_at <= :now

-- name: heartbeat
-- A second beat at the same instant writes the same heartbeat_at; it still
-- counts 1 (row_version), as it must: the attempt is live.
UPDATE jobs SET heartbeat_at = :now, row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: legacy_heartbeat
-- No heartbeat_at column: the beat is written to updated_at. A beat at the
-- claim instant leaves updated_at as it was and still counts 1.
UPDATE jobs SET updated_at = :now, row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: complete
UPDATE jobs
   SET status = 'completed', completed_at = :now, updated_at = :now,
       row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: read_attempt
SELECT attempts, max_retries FROM jobs
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: fail_retry
UPDATE jobs
   SET status = 'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = 'failed', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token AND attempts = :attempts

-- name: fail_final
UPDATE jobs
   SET status = 'failed', failed_at = :now, updated_at = :now,
       last_error = 'failed', row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token AND attempts = :attempts
