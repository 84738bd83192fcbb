-- Port: a queue that leaves claim_token on finished rows and scans (so fires
-- hooks) in table order.
-- SQLite: exclusive-job leases. The reaper never touches them.

-- name: lease_acquire
INSERT INTO job_leases (name, owner, expires_at) VALUES (:name, :token, :expires_at)
    ON CONFLICT (name) DO NOTHING

-- name: lease_takeover
UPDATE job_leases SET owner = :token, expires_at = :expires_at
 WHERE name = :name AND expires_at < :now

-- name: lease_defer
-- run_at = now + min(30, max(1, ceil(left))) seconds, left = expires_at - now
-- in microseconds. Integer division truncates toward zero, so the ceiling
-- of a positive left is (left + 999999) / 1000000; a left <= 0 gives <= 0,
-- which max(1, ...) lifts to one second. A lease row that vanished counts
-- as 0 left (as in the model) instead of a NULL run_at.
UPDATE jobs
   SET status = 'pending', attempts = attempts - 1, claim_token = NULL, updated_at = :now,
       run_at = :now + 1000000 * min(30, max(1, COALESCE(
           (SELECT (expires_at - :now + 999999) / 1000000 FROM job_leases WHERE name = :name), 0)))
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: lease_renew
UPDATE job_leases SET expires_at = :expires_at WHERE name = :name AND owner = :token

-- name: lease_release
DELETE FROM job_leases WHERE name = :name AND owner = :token
