-- SQL Server: the scenario's database, the tables, and the per-session
-- settings SQL Server does not have.
--
-- Isolation: a database per scenario. SQL Server resolves an unqualified
-- table name in the connection's current database, under the user's default
-- schema; it has no per-session search path. A default schema belongs to a
-- database user, not to a connection (and a sysadmin login always resolves
-- to dbo), and the statements use unqualified names, so a schema per
-- scenario cannot isolate them. A database can: CREATE DATABASE, then USE
-- on the scenario's connection.
--
-- Trap: USE only lasts when it is sent as a plain batch. Inside
-- sp_executesql (how a parameterised statement travels) a change of
-- database lasts until sp_executesql returns, and the next statement runs
-- in the login's database again. The mssql backend sends every command that
-- has no parameters as a plain batch for this reason.
--
-- Azure SQL Database has no USE (one database per connection); this dialect
-- is for SQL Server 2016 or later (DATEDIFF_BIG) and Azure SQL Managed
-- Instance, at any database compatibility level (no STRING_SPLIT, which
-- needs level 130, and a scenario database inherits model's level).
--
-- Instants are datetime2(6), UTC, exact to the microsecond: not datetime,
-- which rounds to 1/300 s (.000, .003, .007) and so moves a cutoff by up to
-- 2 ms; not datetimeoffset, whose offset is one more thing that could differ
-- between a bound value and a stored one. Bound instants arrive as
-- datetime2(7) (100 ns); a microsecond value converts to and from
-- datetime2(6) exactly.
--
-- Text columns are nvarchar (the driver binds nvarchar; an nvarchar value
-- compared with a varchar column converts the column on every row) with the
-- binary collation Latin1_General_BIN2: equality is exact (the usual server
-- default, SQL_Latin1_General_CP1_CI_AS, says 'A' = 'a') and ORDER BY
-- follows the code units, the order Rust compares strings in.
--
-- Trap: = and IN ignore trailing spaces under every collation, binary ones
-- included ('mail' = 'mail '). So every comparison of a key with a bound
-- value (id, claim token, lease name and owner) also compares DATALENGTH,
-- and the queue filter is a delimited CHARINDEX (',mail ,' is not inside
-- ',mail,'), never IN; dialect/padding.rs fails a statement that compares a
-- key without its guard. A PRIMARY KEY on the nvarchar would pad too, so ids
-- 'a' and 'a ' could not both be inserted (fencing/ids-differ-by-trailing-
-- space has such pairs): the key of `jobs` and `job_leases` is the text's
-- bytes instead, a persisted CAST to varbinary, which SQL Server compares
-- byte by byte but for trailing 0x00 bytes (a space is 0x2000 in UTF-16,
-- so 'a' and 'a ' differ; only texts ending in U+0000 could meet, and no
-- scenario has one). One limit remains: BIN2 orders UTF-16 code units, so a
-- character above U+FFFF sorts before U+E000..U+FFFF, unlike UTF-8 bytes.
--
-- Integers are bigint, so every integer read back is the i64 the driver
-- bound, and none overflows where the model's i64 would not.

-- name: create_namespace
-- A new database inherits the model database's options, including its
-- compatibility level; no statement here depends on that level.
CREATE DATABASE {namespace}

-- name: enter_namespace
-- Sent as a plain batch by the backend, so the change outlives it.
USE {namespace}

-- name: drop_namespace
-- Leave the database first (a connection cannot drop the database it is
-- in), then close any other connection still inside it, which would make
-- DROP DATABASE fail with "currently in use".
USE master;
ALTER DATABASE {namespace} SET SINGLE_USER WITH ROLLBACK IMMEDIATE;
DROP DATABASE {namespace}

-- name: empty_namespace
-- Between two scenarios on one connection, which keeps its namespace and
-- tables (every table `schema` and `legacy_schema` create must be here).
-- DELETE, not TRUNCATE: a scenario's handful of rows, and TRUNCATE needs
-- ALTER permission on the table.
DELETE FROM jobs;
DELETE FROM job_leases

-- name: set_time_zone
-- Nothing: SQL Server has no session time zone. Only functions such as
-- SYSDATETIME() and GETDATE() see the server's clock and zone, and no
-- statement here calls them: every instant is a bound UTC datetime2, stored
-- and compared as it is.

-- name: schema
CREATE TABLE jobs (
    id            nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    id_key        AS CAST(id AS varbinary(400)) PERSISTED NOT NULL PRIMARY KEY,
    class         nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    queue         nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'default',
    status        nvarchar(20)  COLLATE Latin1_General_BIN2 NOT NULL,
    attempts      bigint        NOT NULL DEFAULT 0,
    max_retries   bigint        NOT NULL DEFAULT 3,
    claim_timeout bigint        NULL,
    claim_token   nvarchar(200) COLLATE Latin1_General_BIN2 NULL,
    heartbeat_at  datetime2(6)  NULL,
    run_at        datetime2(6)  NOT NULL,
    updated_at    datetime2(6)  NOT NULL,
    failed_at     datetime2(6)  NULL,
    completed_at  datetime2(6)  NULL,
    last_error    nvarchar(20)  COLLATE Latin1_General_BIN2 NULL
);
CREATE INDEX jobs_reap ON jobs (status, queue);
CREATE TABLE job_leases (
    name       nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    name_key   AS CAST(name AS varbinary(400)) PERSISTED NOT NULL PRIMARY KEY,
    owner      nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    expires_at datetime2(6)  NOT NULL
)

-- name: legacy_schema
-- The table of a database that refused `ALTER TABLE jobs ADD heartbeat_at`.
CREATE TABLE jobs (
    id            nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    id_key        AS CAST(id AS varbinary(400)) PERSISTED NOT NULL PRIMARY KEY,
    class         nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    queue         nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL DEFAULT N'default',
    status        nvarchar(20)  COLLATE Latin1_General_BIN2 NOT NULL,
    attempts      bigint        NOT NULL DEFAULT 0,
    max_retries   bigint        NOT NULL DEFAULT 3,
    claim_timeout bigint        NULL,
    claim_token   nvarchar(200) COLLATE Latin1_General_BIN2 NULL,
    run_at        datetime2(6)  NOT NULL,
    updated_at    datetime2(6)  NOT NULL,
    failed_at     datetime2(6)  NULL,
    completed_at  datetime2(6)  NULL,
    last_error    nvarchar(20)  COLLATE Latin1_General_BIN2 NULL
);
CREATE INDEX jobs_reap ON jobs (status, queue);
CREATE TABLE job_leases (
    name       nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    name_key   AS CAST(name AS varbinary(400)) PERSISTED NOT NULL PRIMARY KEY,
    owner      nvarchar(200) COLLATE Latin1_General_BIN2 NOT NULL,
    expires_at datetime2(6)  NOT NULL
)
