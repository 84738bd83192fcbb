#!/usr/bin/env sh
# Makes a copy of adapter.py with the seed system's DST bug planted in its
# clock injection, and prints the copy's path. The bug: the application
# holds UTC wall-clock fields in a *local-zone* date, so the instant handed
# to SAQ is datetime(*utc_fields).timestamp() read in the process's TZ (and
# read back the same way). The offset cancels out except when a span crosses
# a DST change, so under TZ=UTC every scenario still passes, and the
# app-zone scenarios (America/New_York fall-back and spring-forward) fail.
#
#     copy=$(sh examples/adapters/saq/tests/dst_copy.sh)
#     # then point an [adapters.saq-dst] command at: python3 "$copy"
#
# The copy lives in a fresh temp folder; delete it when done.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d "${TMPDIR:-/tmp}/saq-dst.XXXXXX")
python3 - "$here/adapter.py" "$dir/adapter.py" <<'PY'
import sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
good_to = "def to_epoch(instant: datetime) -> float:  # CLOCK-TO-EPOCH\n    return instant.timestamp()\n"
good_from = "def from_epoch(seconds: float) -> datetime:  # CLOCK-FROM-EPOCH\n    return EPOCH + timedelta(seconds=seconds)\n"
bad_to = ("def to_epoch(instant: datetime) -> float:  # CLOCK-TO-EPOCH (DST bug planted)\n"
          "    u = instant.astimezone(UTC)\n"
          "    return datetime(u.year, u.month, u.day, u.hour, u.minute, u.second, u.microsecond).timestamp()\n")
bad_from = ("def from_epoch(seconds: float) -> datetime:  # CLOCK-FROM-EPOCH (DST bug planted)\n"
            "    return datetime.fromtimestamp(seconds).replace(tzinfo=UTC)\n")
for good, bad in ((good_to, bad_to), (good_from, bad_from)):
    if text.count(good) != 1:
        sys.exit(f"dst_copy: {src} no longer has exactly one `{good.splitlines()[0]}`: update tests/dst_copy.sh")
    text = text.replace(good, bad)
open(dst, "w").write(text)
PY
echo "$dir/adapter.py"
