-- CockroachDB: the state a scenario left, read back for its outcome. Rows
-- come in byte order of their key: an uncollated STRING already sorts by
-- its bytes in CockroachDB, so no COLLATE clause is needed (or wanted; see
-- reaper.sql). Instants come back in the binary protocol, as UTC
-- microseconds, whatever the session time zone.

-- name: read_jobs
SELECT id, status, attempts, claim_token, heartbeat_at, run_at, updated_at,
       failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: legacy_read_jobs
-- A typed NULL: a bare NULL column would have no type to decode as an instant.
SELECT id, status, attempts, claim_token, CAST(NULL AS TIMESTAMPTZ) AS heartbeat_at, run_at,
       updated_at, failed_at, completed_at, last_error
  FROM jobs ORDER BY id

-- name: read_leases
SELECT name, owner, expires_at FROM job_leases ORDER BY name
