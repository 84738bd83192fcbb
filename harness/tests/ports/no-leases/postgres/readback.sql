-- Port: an older queue version without exclusive jobs (no job_leases table).
-- PostgreSQL: the state a scenario left, read back for its outcome. Rows
-- come in byte order of their key (the "C" collation), as the model's
-- BTreeMap orders them; instants come back in the binary protocol, as UTC
-- microseconds, whatever the session TimeZone.

-- name: read_jobs
SELECT id, status, attempts, claim_token, heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id COLLATE "C"

-- name: legacy_read_jobs
-- A typed NULL: a bare NULL column would be `text` and not decode as an instant.
SELECT id, status, attempts, claim_token, CAST(NULL AS timestamptz) AS heartbeat_at, run_at,
       updated_at, failed_at, completed_at, last_error
  FROM jobs ORDER BY id COLLATE "C"
