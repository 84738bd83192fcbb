-- MySQL and MariaDB: the state read back in the contract's columns, by
-- position. A picked row is `processing`, any other `pending` (finished
-- rows are gone). version stands in `attempts` (it also counts revives, so
-- the profile declares attempts absent); the table has no updated_at,
-- failed_at, completed_at or last_error (typed NULLs).

-- name: read_jobs
SELECT task_instance,
       CASE WHEN picked = 1 THEN 'processing' ELSE 'pending' END AS status,
       version AS attempts, picked_by AS claim_token, last_heartbeat AS heartbeat_at,
       execution_time AS run_at, CAST(NULL AS DATETIME(6)) AS updated_at,
       CAST(NULL AS DATETIME(6)) AS failed_at, CAST(NULL AS DATETIME(6)) AS completed_at,
       CAST(NULL AS BINARY) AS last_error
  FROM scheduled_tasks ORDER BY task_instance
