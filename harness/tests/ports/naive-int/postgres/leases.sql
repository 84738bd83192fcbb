-- PostgreSQL: exclusive-job leases. The reaper never touches them.

-- name: lease_acquire
-- ON CONFLICT DO NOTHING reports 0 rows when the name is taken, without an
-- error that would abort a surrounding transaction.
INSERT INTO job_leases (name, owner, expires_at) VALUES (:name, :token, :expires_at)
    ON CONFLICT (name) DO NOTHING

-- name: lease_takeover
UPDATE job_leases SET owner = :token, expires_at = :expires_at
 WHERE name = :name AND expires_at < :now

-- name: lease_defer
-- run_at = now + min(30, max(1, ceil(left))) seconds, left = expires_at - now.
-- Traps avoided:
-- * The difference is taken between the two timestamp values first, which
--   is exact in microseconds, and only then turned into seconds.
--   `extract(epoch from expires_at) - extract(epoch from :now)` would round
--   each ~1.8e9-second value to a float on PostgreSQL 13 and older (and on
--   CockroachDB), and a left of exactly 12 s could come out as 12.0000002,
--   whose ceiling is 13. From PostgreSQL 14 extract returns numeric, exact
--   either way; on older servers the small difference is still exact enough,
--   since a float of a few seconds is off by far less than a microsecond.
-- * GREATEST and LEAST ignore NULL arguments in PostgreSQL (SQLite's max and
--   min return NULL): with no lease row, greatest(1, least(30, NULL)) would
--   be 30, not the model's 1. COALESCE makes a missing lease count as
--   left = 0, as the model does.
-- * The seconds become an interval by multiplying `interval '1 second'`, an
--   interval of seconds only (see reaper.sql on days and DST).
UPDATE jobs
   SET status = 'pending', attempts = attempts - 1, claim_token = NULL, updated_at = :now,
       run_at = :now + interval '1 second' * greatest(1, least(30, COALESCE(
           (SELECT ceil(extract(epoch FROM (l.expires_at - :now)))
              FROM job_leases l WHERE l.name = :name), 0)))
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: lease_renew
UPDATE job_leases SET expires_at = :expires_at WHERE name = :name AND owner = :token

-- name: lease_release
DELETE FROM job_leases WHERE name = :name AND owner = :token
