-- Port: an older queue version without exclusive jobs (no job_leases table).
-- MySQL and MariaDB: the rows a scenario starts with.

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
