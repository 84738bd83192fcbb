-- Port: a queue that keeps whole seconds (its clock truncated to the second).
-- MySQL and MariaDB: exclusive-job leases. The reaper never touches them.

-- name: lease_acquire
-- Insert-if-absent counting 1 for an insert and 0 for a name that exists,
-- whatever the client's flags. Not ON DUPLICATE KEY UPDATE: it counts 1
-- for an insert, 2 for a changed row and 0 for a row set to its own values,
-- but with CLIENT_FOUND_ROWS (always set by sqlx) that last case counts 1,
-- the same as an insert, so a busy lease would read as taken. INSERT IGNORE
-- counts only inserted rows, with or without the flag, and stays right
-- when two workers race for the name (the loser waits on the row, then
-- counts 0). Its own trap: IGNORE turns every error of the row into a
-- warning, even in strict mode, so a name longer than the column's 255
-- bytes would be cut and stored, not refused. That cannot pass unseen: the
-- stored name is read back into the outcome, where it differs from the
-- model's.
INSERT IGNORE INTO job_leases (name, owner, expires_at) VALUES (:name, :token, :expires_at)

-- name: lease_takeover
-- Always changes owner or expires_at (the new expiry is after :now, the old
-- one before it); row_version keeps the count right regardless.
UPDATE job_leases SET owner = :token, expires_at = :expires_at, row_version = row_version + 1
 WHERE name = :name AND expires_at < :now

-- name: lease_defer
-- run_at = now + min(30, max(1, ceil(left))) seconds, left = expires_at - now
-- exact in microseconds (TIMESTAMPDIFF(MICROSECOND, ...) is a BIGINT).
-- The ceiling is integer arithmetic: DIV truncates toward zero, so for a
-- positive left (left + 999999) DIV 1000000 is its ceiling, and a left <= 0
-- gives <= 0, which GREATEST(1, ...) lifts to one second. Not CEIL(left /
-- 1000000): `/` makes a DECIMAL whose shown scale is div_precision_increment
-- (4 by default: 12000001 / 1000000 shows as 12.0000). MariaDB 10.11 keeps
-- more digits inside the expression, so its CEIL still gives 13, but the
-- integer form is exact without depending on how either server does it.
-- A missing lease counts as left = 0 (one second), as in the model, instead
-- of a NULL that GREATEST would pass on to run_at.
UPDATE jobs
   SET status = 'pending', attempts = attempts - 1, claim_token = NULL, updated_at = :now,
       run_at = CAST(:now AS DATETIME) + INTERVAL LEAST(30, GREATEST(1,
           (COALESCE((SELECT TIMESTAMPDIFF(MICROSECOND, CAST(:now AS DATETIME), expires_at)
                        FROM job_leases WHERE name = :name), 0) + 999999) DIV 1000000)) SECOND,
       row_version = row_version + 1
 WHERE id = :id AND status = 'processing' AND claim_token = :token

-- name: lease_renew
-- A second renewal to the same expiry still counts 1 (row_version).
UPDATE job_leases SET expires_at = :expires_at, row_version = row_version + 1
 WHERE name = :name AND owner = :token

-- name: lease_release
DELETE FROM job_leases WHERE name = :name AND owner = :token
