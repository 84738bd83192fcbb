#!/usr/bin/env bash
# Compares a real queue's corpus run through its adapter with the verdicts
# its example committed (examples/adapters/<queue>/expected/<target>.txt):
# one line a scenario, `ok NAME`, `skipped NAME`, `pinned NAME` or
# `FAIL NAME`, each FAIL classified in the adapter's README. A queue's own
# defects keep failing on purpose (they are what reapcheck found); any
# change of a verdict, either way, fails this step, so a fixed defect or a
# new failure is seen at once.
#
#   ci/adapter-baseline.sh adapter:saq examples/adapters/saq/expected/postgres.txt
#
# Run from the folder of the reapcheck.toml that names the adapter. Exit 0
# when the verdicts equal the file, 1 when they differ (the diff is
# printed), 2 when the run itself could not start.
set -euo pipefail
target=$1 expected=$2
out=$(mktemp) got=$(mktemp)
trap 'rm -f "$out" "$got"' EXIT
status=0
REAPCHECK_REQUIRE="$target" cargo run -q -- run --db "$target" --coverage-min 0 >"$out" 2>&1 || status=$?
if [ "$status" -eq 2 ]; then
    cat "$out" >&2
    echo "error: reapcheck run --db $target refused its input" >&2
    exit 2
fi
# `ok       grace/floor  on adapter:saq (...)` -> `ok grace/floor`
awk -v t=" on $target" '
    index($0, t) == 0 { next }
    /^ok / { print "ok " $2; next }
    /^skipped: / { print "skipped " $2; next }
    /^diverged / { print "pinned " $2; next }
    /^FAIL / { print "FAIL " $2; next }
' "$out" | sort >"$got"
if [ ! -s "$got" ]; then
    cat "$out" >&2
    echo "error: no verdict on $target: did the adapter start?" >&2
    exit 1
fi
if ! diff -u "$expected" "$got"; then
    tail -n 60 "$out"
    echo "error: $target's verdicts changed from $expected (above: expected -, now +);" \
        "read the run, classify each change in the adapter's README, and update the file" >&2
    exit 1
fi
echo "$target: $(grep -c '^ok ' "$got") ok, $(grep -c '^FAIL ' "$got") failing as classified, $(grep -c '^skipped ' "$got") skipped: as $expected says"
