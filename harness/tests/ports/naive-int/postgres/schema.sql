-- A port of a queue whose PostgreSQL tables use `INT` counters and
-- `timestamp` (without time zone) instants holding UTC, as many ORMs create
-- them, with no cast anywhere in its statements. It runs with instants
-- bound as naive UTC `timestamp` (InstantEncoding::NaiveUtc), so comparing
-- a column with a parameter converts nothing through the session TimeZone.
-- A test fixture: harness/tests/ports.rs runs the corpus against it.

-- name: create_namespace
CREATE SCHEMA {namespace}

-- name: enter_namespace
-- The schema alone, without `public`: an unqualified `jobs` can only be this
-- scenario's table, never a leftover one in `public`.
SET search_path TO {namespace}

-- name: drop_namespace
DROP SCHEMA {namespace} CASCADE

-- name: set_time_zone
-- Bound, not formatted into the text (SET cannot take a parameter). Note
-- that PostgreSQL reads a bare `+05:30` as a POSIX zone, which means five
-- and a half hours WEST of Greenwich: one more reason no outcome may depend
-- on the session zone.
SELECT set_config('TimeZone', :zone, false)

-- name: schema
CREATE TABLE jobs (
    id            text PRIMARY KEY,
    class         text NOT NULL,
    queue         text NOT NULL DEFAULT 'default',
    status        text NOT NULL,
    attempts      INT NOT NULL DEFAULT 0,
    max_retries   INT NOT NULL DEFAULT 3,
    claim_timeout INT,
    claim_token   text,
    heartbeat_at  timestamp,
    run_at        timestamp NOT NULL,
    updated_at    timestamp NOT NULL,
    failed_at     timestamp,
    completed_at  timestamp,
    last_error    text
);
CREATE INDEX jobs_reap ON jobs (status, queue);
CREATE TABLE job_leases (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamp NOT NULL
);

-- A guard the queue keeps in the database: a plpgsql function in dollar
-- quotes with `;` inside, and its trigger, so the script splitter is tried.
CREATE FUNCTION jobs_guard() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF NEW.attempts < 0 THEN
        RAISE EXCEPTION 'attempts below zero; refused';
    END IF;
    RETURN NEW;
END;
$body$;
CREATE TRIGGER jobs_guard BEFORE INSERT OR UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_guard();

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            text PRIMARY KEY,
    class         text NOT NULL,
    queue         text NOT NULL DEFAULT 'default',
    status        text NOT NULL,
    attempts      INT NOT NULL DEFAULT 0,
    max_retries   INT NOT NULL DEFAULT 3,
    claim_timeout INT,
    claim_token   text,
    run_at        timestamp NOT NULL,
    updated_at    timestamp NOT NULL,
    failed_at     timestamp,
    completed_at  timestamp,
    last_error    text
);
CREATE INDEX jobs_reap ON jobs (status, queue);
CREATE TABLE job_leases (
    name       text PRIMARY KEY,
    owner      text NOT NULL,
    expires_at timestamp NOT NULL
);

-- A guard the queue keeps in the database: a plpgsql function in dollar
-- quotes with `;` inside, and its trigger, so the script splitter is tried.
CREATE FUNCTION jobs_guard() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF NEW.attempts < 0 THEN
        RAISE EXCEPTION 'attempts below zero; refused';
    END IF;
    RETURN NEW;
END;
$body$;
CREATE TRIGGER jobs_guard BEFORE INSERT OR UPDATE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_guard();
