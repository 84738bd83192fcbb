#!/bin/sh
# Loads the IANA time zone tables into a MariaDB (or MySQL) server, so that
# scenarios with a named `session_time_zone` (`America/New_York`,
# `Asia/Kathmandu`) can run `SET time_zone = 'America/New_York'`. A server
# without them knows only offsets such as '+05:30' and refuses names with
# "Unknown or incorrect time zone".
#
# Idempotent: does nothing when mysql.time_zone_name already has rows.
#
# The server is reached with MARIADB_HOST (127.0.0.1), MARIADB_PORT (3306)
# and MARIADB_USER (root); a password, if any, goes in MYSQL_PWD, which the
# client reads from the environment, never on the command line. The zone
# files come from ZONEINFO (/usr/share/zoneinfo, the tzdata package).
set -eu

client="${MARIADB_CLIENT:-mariadb}"
zoneinfo="${ZONEINFO:-/usr/share/zoneinfo}"
set -- -h "${MARIADB_HOST:-127.0.0.1}" -P "${MARIADB_PORT:-3306}" -u "${MARIADB_USER:-root}"

loaded=$("$client" "$@" -N -B -e 'SELECT COUNT(*) FROM mysql.time_zone_name')
if [ "$loaded" -gt 0 ]; then
    echo "time zone tables already loaded ($loaded names); nothing to do"
    exit 0
fi

# The loader warns about files that are not zones (leap-seconds.list,
# zone.tab, ...) and skips them; those warnings are expected.
mysql_tzinfo_to_sql "$zoneinfo" | "$client" "$@" mysql

# Prove it: a named zone must now convert.
"$client" "$@" -N -B -e "SELECT COUNT(*) FROM mysql.time_zone_name; SELECT CONVERT_TZ('2026-07-01 12:00:00', 'UTC', 'America/New_York')"
