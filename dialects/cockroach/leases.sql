-- CockroachDB: exclusive-job leases. The reaper never touches them.

-- name: lease_acquire
-- ON CONFLICT DO NOTHING is supported as in PostgreSQL and reports 0 rows
-- when the name is taken.
INSERT INTO job_leases (name, owner, expires_at) VALUES (:name, :token, :expires_at)
    ON CONFLICT (name) DO NOTHING

-- name: lease_takeover
UPDATE job_leases SET owner = :token, expires_at = :expires_at
 WHERE name = :name AND expires_at < :now

-- name: lease_defer
-- run_at = now + min(30, max(1, ceil(left))) seconds, left = expires_at - now.
-- Differences from PostgreSQL, and the traps they set:
-- * CockroachDB's extract(epoch FROM ...) returns FLOAT, not PostgreSQL 14's
--   exact numeric (and extract(epoch FROM a TIMESTAMPTZ) was an INT,
--   truncated, in old releases). So the difference is taken between the two
--   TIMESTAMPTZ values first, exact in microseconds, and only that small
--   interval is turned into seconds: a float of a few seconds is off by far
--   less than a microsecond, so its ceiling is exact. Taking the epoch of
--   each instant (about 1.8e9 s) and subtracting would not be.
-- * ceil of a FLOAT is a whole FLOAT, so the cast to INT8 (which rounds)
--   is exact.
-- * COALESCE makes a missing lease count as left = 0, as the model does,
--   without relying on how GREATEST and LEAST treat NULL.
-- * `INTERVAL * INT8` is supported; the interval is of seconds only.
UPDATE jobs
   SET status = 'pending', attempts = attempts - 1, claim_token = NULL, updated_at = :now,
       run_at = :now + interval '1 second' * greatest(1, least(30, COALESCE(
           (SELECT CAST(ceil(extract(epoch FROM (l.expires_at - :now))) AS INT8)
              FROM job_leases l WHERE l.name = :name), 0)))
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: lease_renew
UPDATE job_leases SET expires_at = :expires_at WHERE name = :name AND owner = :token

-- name: lease_release
DELETE FROM job_leases WHERE name = :name AND owner = :token
