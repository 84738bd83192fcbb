-- SQL Server: the state a scenario left, read back for its outcome. ORDER BY
-- follows the columns' binary collation, so rows come in code-unit order.

-- name: read_jobs
SELECT id, status, attempts, claim_token, heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: legacy_read_jobs
-- A bare NULL would be typed int; cast it to the column type it stands for.
SELECT id, status, attempts, claim_token, CAST(NULL AS datetime2(6)) AS heartbeat_at, run_at,
       updated_at, failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: read_leases
SELECT name, owner, expires_at FROM job_leases ORDER BY name
