-- PostgreSQL: the state a scenario left, read back for its outcome. Rows
-- come in byte order of their key (the "C" collation), as the model's
-- BTreeMap orders them; instants come back in the binary protocol, as UTC
-- microseconds, whatever the session TimeZone.

-- name: read_jobs
SELECT id, status, attempts, claim_token, heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id COLLATE "C"

-- name: legacy_read_jobs
SELECT id, status, attempts, claim_token, NULL AS heartbeat_at, run_at,
       updated_at, failed_at, completed_at, last_error
  FROM jobs ORDER BY id COLLATE "C"

-- name: read_leases
SELECT name, owner, expires_at FROM job_leases ORDER BY name COLLATE "C"
