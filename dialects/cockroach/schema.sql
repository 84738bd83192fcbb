-- CockroachDB: the tables, the scenario's private schema, and the session
-- time zone. The SQL is PostgreSQL's (dialects/postgres), spoken over the
-- same wire protocol; only what CockroachDB does differently is changed, and
-- each difference is commented where it is made.
--
-- Instants are `TIMESTAMPTZ`, microsecond precision by default (CockroachDB
-- stores nothing finer, so nothing is lost), bound and read back in the
-- binary protocol as UTC microseconds. The traps of dialects/postgres apply
-- here too: no `TIMESTAMP` without time zone, no reduced precision, no
-- `now()`. And one of CockroachDB's own:
-- * Columns are `INT8`, never bare `INT`: the `default_int_size` session
--   setting can make `INT` mean `INT4`.
-- Schema changes run one command at a time, each in its own implicit
-- transaction (reapcheck splits a script at `;`): CockroachDB runs DDL as
-- background jobs, and DDL mixed with writes in one explicit transaction can
-- fail or be retried.
--
-- Isolation: a database per scenario, not a schema. A CREATE SCHEMA or DROP
-- SCHEMA writes the parent database's descriptor, so scenarios running at
-- once, each with a schema in one database, would all change that one
-- descriptor and wait on (or retry against) each other. A new database
-- shares no descriptor with another scenario's. Indexes are declared inside
-- CREATE TABLE for the same reason: a CREATE INDEX on an existing table is
-- a schema-change job of its own, with its own backfill and waits, where a
-- table created with its index is ready when the statement returns. (The
-- backend retries a statement that still fails with 40001.)

-- name: create_namespace
CREATE DATABASE {namespace}

-- name: enter_namespace
-- Unqualified names resolve in {namespace}.public from now on.
SET database = {namespace}

-- name: drop_namespace
-- Back to the URL's database first: the current database is not dropped.
RESET database;
DROP DATABASE {namespace} CASCADE

-- name: empty_namespace
-- Between two scenarios on one connection, which keeps its namespace and
-- tables (every table `schema` and `legacy_schema` create must be here).
-- DELETE, not TRUNCATE: TRUNCATE is a schema change in CockroachDB (a new
-- table id and a job), which a scenario's handful of rows does not need.
DELETE FROM jobs;
DELETE FROM job_leases

-- name: set_time_zone
-- CockroachDB has set_config (bound, unlike SET). Its session variable is
-- spelled `timezone`; the lower-case name is accepted by PostgreSQL too.
SELECT set_config('timezone', :zone, false)

-- name: schema
CREATE TABLE jobs (
    id            STRING PRIMARY KEY,
    class         STRING NOT NULL,
    queue         STRING NOT NULL DEFAULT 'default',
    status        STRING NOT NULL,
    attempts      INT8 NOT NULL DEFAULT 0,
    max_retries   INT8 NOT NULL DEFAULT 3,
    claim_timeout INT8,
    claim_token   STRING,
    heartbeat_at  TIMESTAMPTZ,
    run_at        TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    failed_at     TIMESTAMPTZ,
    completed_at  TIMESTAMPTZ,
    last_error    STRING,
    INDEX jobs_reap (status, queue)
);
CREATE TABLE job_leases (
    name       STRING PRIMARY KEY,
    owner      STRING NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            STRING PRIMARY KEY,
    class         STRING NOT NULL,
    queue         STRING NOT NULL DEFAULT 'default',
    status        STRING NOT NULL,
    attempts      INT8 NOT NULL DEFAULT 0,
    max_retries   INT8 NOT NULL DEFAULT 3,
    claim_timeout INT8,
    claim_token   STRING,
    run_at        TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    failed_at     TIMESTAMPTZ,
    completed_at  TIMESTAMPTZ,
    last_error    STRING,
    INDEX jobs_reap (status, queue)
);
CREATE TABLE job_leases (
    name       STRING PRIMARY KEY,
    owner      STRING NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
