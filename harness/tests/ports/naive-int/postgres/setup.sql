-- PostgreSQL: the rows a scenario starts with. Every value is bound with its
-- type (text, bigint, and timestamp for instants), NULLs included, so nothing is parsed
-- from text under the session's DateStyle or TimeZone.

-- name: insert_job
INSERT INTO jobs (id, class, queue, status, attempts, max_retries, claim_timeout,
                  claim_token, heartbeat_at, run_at, updated_at)
VALUES (:id, :class, :queue, :status, :attempts, :max_retries, :claim_timeout,
        :claim_token, :heartbeat_at, :run_at, :updated_at)

-- name: legacy_insert_job
INSERT INTO jobs (id, class, queue, status, attempts, max_retries, claim_timeout,
                  claim_token, run_at, updated_at)
VALUES (:id, :class, :queue, :status, :attempts, :max_retries, :claim_timeout,
        :claim_token, :run_at, :updated_at)

-- name: insert_lease
INSERT INTO job_leases (name, owner, expires_at) VALUES (:name, :owner, :expires_at)
