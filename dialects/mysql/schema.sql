-- MySQL and MariaDB: the scenario's database, the session time zone, the
-- tables. One dialect serves both servers; every statement here runs
-- unchanged on MySQL 8 and MariaDB 10.6+, and where the two behave
-- differently the SQL is written so the difference cannot show.
--
-- Instants are DATETIME(6) holding UTC, bound and read as plain date-times:
-- - not TIMESTAMP, which converts from and to the session `time_zone` (so
--   a session in America/New_York would store, compare and read different
--   values, and a DST gap has instants it cannot hold), ends at
--   2038-01-19 03:14:07 UTC, and, while explicit_defaults_for_timestamp is
--   OFF (the MariaDB default before 10.10), gives the first TIMESTAMP column
--   DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP: every UPDATE would
--   silently rewrite it from the server's clock. DATETIME is a calendar
--   value no session setting touches; it holds years 1000 to 9999.
-- - with (6): DATETIME alone keeps whole seconds, and the two servers drop
--   excess fractional digits differently (MySQL rounds, MariaDB truncates),
--   so a value with more digits than the column would come back different
--   on each. With six digits, as many as the harness has, nothing is cut.
-- - no statement reads the server's clock (NOW(), CURRENT_TIMESTAMP,
--   UNIX_TIMESTAMP(), FROM_UNIXTIME() all follow the session time zone);
--   every instant is a bound :parameter.
--
-- Text is VARBINARY: bytes, compared and ordered exactly as Rust compares
-- strings (UTF-8 byte order is code point order), case-sensitive and
-- never padded. A _bin collation is not enough: utf8mb4_bin is a PAD SPACE
-- collation on both servers, so 'a' = 'a ' is true, the primary key refuses
-- a job 'a ' beside 'a', and 'a' sorts after 'a<TAB>'. The NO PAD binary
-- collations have different names on each server (MySQL 8
-- utf8mb4_0900_bin, MariaDB utf8mb4_nopad_bin), so naming one would split
-- the dialect; VARBINARY is the same on both. The backend reads text
-- columns as bytes and checks they are UTF-8.
--
-- Every UPDATE also adds 1 to `row_version`, a column no outcome reads, so
-- that a row the WHERE matches is always a row the UPDATE changes. sqlx
-- always sets the CLIENT_FOUND_ROWS capability (sqlx-mysql
-- src/connection/stream.rs), with which an UPDATE counts the rows it
-- matched; a client without it counts only rows whose values changed, so a
-- second heartbeat at the same instant, or a legacy heartbeat at the claim
-- instant, would count 0 and read as `fenced`. With row_version the counts
-- are the model's either way.

-- name: create_namespace
-- Each scenario gets a database of its own. The character set is given
-- because a server default of latin1 would apply to anything created
-- without one.
CREATE DATABASE {namespace} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin

-- name: enter_namespace
-- USE is run through the text protocol (the backend sends commands without
-- parameters that way): MySQL refuses USE as a prepared statement.
-- Strict mode makes a value too long for its column an error instead of a
-- silent truncation with a warning; MySQL 8 and MariaDB enable
-- STRICT_TRANS_TABLES by default, but a server may be configured without
-- it. CONCAT_WS skips the NULL of an empty sql_mode (a leading comma).
USE {namespace};
SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'STRICT_ALL_TABLES')

-- name: drop_namespace
DROP DATABASE {namespace}

-- name: empty_namespace
-- Between two scenarios on one connection, which keeps its namespace and
-- tables (every table `schema` and `legacy_schema` create must be here).
-- DELETE, not TRUNCATE: TRUNCATE drops and recreates the table (an implicit
-- commit and a new tablespace); for a scenario's handful of rows DELETE took
-- a quarter of its time on MariaDB 10.11.
DELETE FROM jobs;
DELETE FROM job_leases

-- name: set_time_zone
-- Bound, not spliced into the text. Named zones (America/New_York) need the
-- server's time zone tables, which a fresh MariaDB or MySQL does not have
-- loaded (ci/mysql-timezones.sh loads them); offsets ('+05:30') always
-- work. No statement depends on the zone: this proves it.
SET time_zone = :zone

-- name: schema
-- ENGINE is explicit: MyISAM has no transactions and no row locks.
-- STATS_PERSISTENT = 0: statistics are recomputed from the rows a scenario
-- inserts, not kept from an earlier scenario whose rows were deleted
-- (the tables are reused, emptied by empty_namespace). With kept
-- statistics MariaDB read boundaries/scan-order-against-last-seen's rows
-- by the primary key, so a scan without ORDER BY still came back by id
-- and its mutant survived; alone, on new tables, it was killed.
CREATE TABLE jobs (
    id            VARBINARY(255) NOT NULL PRIMARY KEY,
    class         VARBINARY(255) NOT NULL,
    queue         VARBINARY(255) NOT NULL DEFAULT 'default',
    status        VARBINARY(16)  NOT NULL,
    attempts      BIGINT         NOT NULL DEFAULT 0,
    max_retries   BIGINT         NOT NULL DEFAULT 3,
    claim_timeout BIGINT         NULL,
    claim_token   VARBINARY(255) NULL,
    heartbeat_at  DATETIME(6)    NULL,
    run_at        DATETIME(6)    NOT NULL,
    updated_at    DATETIME(6)    NOT NULL,
    failed_at     DATETIME(6)    NULL,
    completed_at  DATETIME(6)    NULL,
    last_error    VARBINARY(16)  NULL,
    row_version   BIGINT         NOT NULL DEFAULT 0,
    -- last_seen is COALESCE(heartbeat_at, updated_at), kept by the server
    -- (STORED: computed on every write, never by a reader), so that
    -- jobs_stale can index it. It serves reap_scan, which every worker's
    -- poll runs and which compares last_seen, not the COALESCE: MariaDB
    -- 10.11 does not use an index on a generated column for the
    -- expression it is made of. EXPLAIN shows `range` on jobs_stale. With
    -- only jobs_reap, MariaDB walked the primary key for the scan's ORDER
    -- BY id and read the whole table (170x slower at 1M rows than at 10k,
    -- issue 13); with it 0.75x. `reapcheck bench --scale` measures it. No
    -- statement writes last_seen; the guarded UPDATEs keep the COALESCE.
    last_seen     DATETIME(6)    AS (COALESCE(heartbeat_at, updated_at)) STORED,
    INDEX jobs_reap (status, queue),
    INDEX jobs_stale (status, last_seen)
) ENGINE = InnoDB STATS_PERSISTENT = 0;
CREATE TABLE job_leases (
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    owner       VARBINARY(255) NOT NULL,
    expires_at  DATETIME(6)    NOT NULL,
    row_version BIGINT         NOT NULL DEFAULT 0
) ENGINE = InnoDB

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            VARBINARY(255) NOT NULL PRIMARY KEY,
    class         VARBINARY(255) NOT NULL,
    queue         VARBINARY(255) NOT NULL DEFAULT 'default',
    status        VARBINARY(16)  NOT NULL,
    attempts      BIGINT         NOT NULL DEFAULT 0,
    max_retries   BIGINT         NOT NULL DEFAULT 3,
    claim_timeout BIGINT         NULL,
    claim_token   VARBINARY(255) NULL,
    run_at        DATETIME(6)    NOT NULL,
    updated_at    DATETIME(6)    NOT NULL,
    failed_at     DATETIME(6)    NULL,
    completed_at  DATETIME(6)    NULL,
    last_error    VARBINARY(16)  NULL,
    row_version   BIGINT         NOT NULL DEFAULT 0,
    -- As jobs_stale in `schema`, on the only instant this table has.
    INDEX jobs_reap (status, queue),
    INDEX jobs_stale (status, updated_at)
) ENGINE = InnoDB STATS_PERSISTENT = 0;
CREATE TABLE job_leases (
    name        VARBINARY(255) NOT NULL PRIMARY KEY,
    owner       VARBINARY(255) NOT NULL,
    expires_at  DATETIME(6)    NOT NULL,
    row_version BIGINT         NOT NULL DEFAULT 0
) ENGINE = InnoDB
