-- SQL Server: exclusive-job leases. The reaper never touches them.

-- name: lease_acquire
-- Insert if absent: 1 row when inserted, 0 when a lease of that name exists.
-- UPDLOCK, HOLDLOCK keep a key-range lock on the name from the check to the
-- insert, so of two racing acquirers the second waits and then finds the
-- row (0 rows) instead of failing on the primary key. No MERGE: it is no
-- more atomic without the same hints, and has a history of bugs.
INSERT INTO job_leases (name, owner, expires_at)
SELECT :name, :token, :expires_at
 WHERE NOT EXISTS (SELECT 1 FROM job_leases WITH (UPDLOCK, HOLDLOCK)
                    WHERE name = :name AND DATALENGTH(name) = DATALENGTH(:name))

-- name: lease_takeover
UPDATE job_leases SET owner = :token, expires_at = :expires_at
 WHERE name = :name AND DATALENGTH(name) = DATALENGTH(:name) AND expires_at < :now

-- name: lease_defer
-- run_at = now + min(30, max(1, ceil(left))) seconds, left = expires_at - now.
--
-- left is DATEDIFF_BIG(microsecond, :now, expires_at), never DATEDIFF.
-- DATEDIFF counts the boundaries of its unit crossed between two instants,
-- not the time elapsed: DATEDIFF(second, '12:00:00.100', '12:00:01.900') is
-- 1 where ceil(1.8 s) is 2. Counted in microseconds, on values that are
-- whole microseconds, boundaries crossed and microseconds elapsed are the
-- same number. DATEDIFF returns int and fails (error 535) past 2^31
-- microseconds, about 36 minutes, shorter than most leases; DATEDIFF_BIG
-- returns bigint.
--
-- Integer division truncates toward zero, so for a positive left the
-- ceiling in seconds is (left + 999999) / 1000000; a left <= 0 gives 0 or
-- less, which the clamp lifts to 1. No lease row (released in between)
-- counts as left = 0, as in the model: one second.
--
-- The clamp is done in bigint and only its result cast to int (DATEADD takes
-- an int): a CAST inside a CASE branch can be evaluated before the WHEN that
-- guards it, and would overflow on a lease that expires years away.
UPDATE jobs
   SET status = N'pending', attempts = attempts - 1, claim_token = NULL, updated_at = :now,
       run_at = (
           SELECT DATEADD(second,
                          CAST(CASE WHEN w.up < 1 THEN 1 WHEN w.up > 30 THEN 30 ELSE w.up END AS int),
                          :now)
             FROM (SELECT (COALESCE((SELECT DATEDIFF_BIG(microsecond, :now, l.expires_at)
                                       FROM job_leases AS l
                                      WHERE l.name = :name AND DATALENGTH(l.name) = DATALENGTH(:name)), 0) + 999999) / 1000000 AS up) AS w)
 WHERE id = :id AND DATALENGTH(id) = DATALENGTH(:id)
   AND status = N'processing'
   AND claim_token = :token AND DATALENGTH(claim_token) = DATALENGTH(:token)

-- name: lease_renew
UPDATE job_leases SET expires_at = :expires_at
 WHERE name = :name AND DATALENGTH(name) = DATALENGTH(:name)
   AND owner = :token AND DATALENGTH(owner) = DATALENGTH(:token)

-- name: lease_release
DELETE FROM job_leases
 WHERE name = :name AND DATALENGTH(name) = DATALENGTH(:name)
   AND owner = :token AND DATALENGTH(owner) = DATALENGTH(:token)
