#!/bin/sh
# Loads the IANA time zone tables into a MariaDB or an Oracle MySQL server,
# so that scenarios with a named `session_time_zone` (`America/New_York`,
# `Asia/Kathmandu`) can run `SET time_zone = 'America/New_York'`. A server
# without them knows only offsets such as '+05:30' and refuses names with
# error 1298 "Unknown or incorrect time zone"; reapcheck detects that once
# per target and fails those scenarios with a line naming this script.
#
# Both servers ship the loader, mysql_tzinfo_to_sql (MariaDB also as
# mariadb-tzinfo-to-sql), and read its output into the `mysql` schema:
#
#   MariaDB:      mariadb-tzinfo-to-sql /usr/share/zoneinfo | mariadb -u root mysql
#   Oracle MySQL: mysql_tzinfo_to_sql /usr/share/zoneinfo | mysql -u root mysql
#
# Idempotent: does nothing when mysql.time_zone_name already has rows.
#
# The server is reached with MYSQL_HOST (127.0.0.1), MYSQL_PORT (3306) and
# MYSQL_USER (root) (MARIADB_HOST, MARIADB_PORT and MARIADB_USER are read
# too); a password, if any, goes in MYSQL_PWD, which the client reads from
# the environment, never on the command line. The client is MYSQL_CLIENT,
# else `mariadb` when installed, else `mysql`. The zone files come from
# ZONEINFO (/usr/share/zoneinfo, the tzdata package).
set -eu

if [ -n "${MYSQL_CLIENT:-${MARIADB_CLIENT:-}}" ]; then
    client="${MYSQL_CLIENT:-$MARIADB_CLIENT}"
elif command -v mariadb >/dev/null 2>&1; then
    client=mariadb
else
    client=mysql
fi
if command -v mysql_tzinfo_to_sql >/dev/null 2>&1; then
    loader=mysql_tzinfo_to_sql
else
    loader=mariadb-tzinfo-to-sql
fi
zoneinfo="${ZONEINFO:-/usr/share/zoneinfo}"
set -- -h "${MYSQL_HOST:-${MARIADB_HOST:-127.0.0.1}}" -P "${MYSQL_PORT:-${MARIADB_PORT:-3306}}" \
    -u "${MYSQL_USER:-${MARIADB_USER:-root}}"

loaded=$("$client" "$@" -N -B -e 'SELECT COUNT(*) FROM mysql.time_zone_name')
if [ "$loaded" -gt 0 ]; then
    echo "time zone tables already loaded ($loaded names); nothing to do"
    exit 0
fi

# The loader warns about files that are not zones (leap-seconds.list,
# zone.tab, ...) and skips them; those warnings are expected.
"$loader" "$zoneinfo" | "$client" "$@" mysql

# Prove it: a named zone must now convert.
"$client" "$@" -N -B -e "SELECT COUNT(*) FROM mysql.time_zone_name; SELECT CONVERT_TZ('2026-07-01 12:00:00', 'UTC', 'America/New_York')"
