-- Port: a queue that leaves claim_token on finished rows and scans (so fires
-- hooks) in table order.
-- SQLite: the state a scenario left, read back for its outcome.

-- name: read_jobs
SELECT id, status, attempts, claim_token, heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: legacy_read_jobs
SELECT id, status, attempts, claim_token, NULL AS heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: read_leases
SELECT name, owner, expires_at FROM job_leases ORDER BY name
