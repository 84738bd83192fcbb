-- SQL Server: what a worker does with its attempt. Every write is fenced by
-- the attempt's claim token, so a worker that lost its job changes nothing.
-- Literals are N'...' so they are nvarchar like the columns they meet.

-- name: claim
-- Only this attempt's beats count: the previous attempt's heartbeat_at goes.
UPDATE jobs
   SET status = N'processing', attempts = attempts + 1, updated_at = :now,
       claim_timeout = :claim_timeout, heartbeat_at = NULL, claim_token = :token
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id) AND status = N'pending' AND run_at <= :now

-- name: legacy_claim
UPDATE jobs
   SET status = N'processing', attempts = attempts + 1, updated_at = :now,
       claim_timeout = :claim_timeout, claim_token = :token
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id) AND status = N'pending' AND run_at <= :now

-- name: heartbeat
UPDATE jobs SET heartbeat_at = :now
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)

-- name: legacy_heartbeat
-- No heartbeat_at column: the beat is written to updated_at.
UPDATE jobs SET updated_at = :now
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)

-- name: complete
UPDATE jobs
   SET status = N'completed', completed_at = :now, updated_at = :now, claim_token = NULL
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)

-- name: read_attempt
SELECT attempts, max_retries FROM jobs
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)

-- name: fail_retry
UPDATE jobs
   SET status = N'pending', run_at = :run_at, updated_at = :now, claim_token = NULL,
       last_error = N'failed'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)
   AND attempts = :attempts

-- name: fail_final
UPDATE jobs
   SET status = N'failed', failed_at = :now, updated_at = :now, claim_token = NULL,
       last_error = N'failed'
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)
   AND attempts = :attempts
