-- PostgreSQL: dead executions. An execution is dead when it is picked and
-- its last_heartbeat <= the cutoff (db-scheduler's `<=`); the scan floor
-- is 30 s below :now with the same `<=` (an interval of seconds only, which
-- no session TimeZone changes). There are no queues: :all_queues and
-- :queues are not read.
--
-- A dead execution is revived at once: picked goes, execution_time = :now
-- (not :run_at: the queue has no backoff), and version is bumped. The
-- guard re-checks the scanned row: still picked, still the scanned version,
-- and still silent since the cutoff. The version alone would not do: a
-- heartbeat does not bump it, so a beat landing between the scan and the
-- revive would be lost. last_heartbeat is left as it was (the pick that
-- revives it writes a new one).

-- name: reap_scan
-- version stands in the contract's `attempts` column (the fence the guard
-- checks); the table keeps no retry limit (the largest count: never spent)
-- and no per-attempt timeout (NULL).
SELECT task_instance, task_name, version, CAST(9223372036854775807 AS bigint) AS max_retries,
       CAST(NULL AS bigint) AS claim_timeout,
       CAST(CASE WHEN last_heartbeat IS NULL THEN 0 ELSE 1 END AS bigint) AS has_beat
  FROM scheduled_tasks
 WHERE picked AND last_heartbeat <= :now - interval '30 seconds'
 ORDER BY task_instance COLLATE "C"

-- reap_interrupt and reap_fail are not written: under give_up = never and
-- non_idempotent = retry the driver never runs them (docs/policy.md,
-- "Statements a policy never runs").

-- name: reap_retry
UPDATE scheduled_tasks
   SET picked = false, picked_by = NULL, execution_time = :now,
       consecutive_failures = consecutive_failures + 1, version = version + 1
 WHERE task_instance = :id AND picked AND version = :attempts
   AND last_heartbeat <= :cutoff
