#!/bin/sh
# Wall time of `reapcheck mutate` for two builds, back to back, in pairs:
# each pair runs both builds, each in its own checkout (its own scenarios
# and dialects), the old one first in odd pairs and the new one first in
# even pairs, and prints both times and their ratio with the load average;
# the last line is the median of the pairs' ratios (of an even count, the
# mean of the middle two).
#
#   ci/mutate-pair.sh OLD_BINARY OLD_CHECKOUT NEW_BINARY NEW_CHECKOUT [PAIRS] [TARGETS]
#
# PAIRS defaults to 3, TARGETS to sqlite,postgres,mariadb. The targets'
# REAPCHECK_<TARGET>_URL must be set, as for `reapcheck mutate`. Exits 1
# when either build's mutate fails (its output is in the temporary folder
# named on that line, which is kept; after a run where every mutate passed
# the folder is removed). Issue 22's "at most half of today's wall time" is
# this script's median with OLD = a release build of 9cf89ba.
set -eu
old_bin=$1 old_dir=$2 new_bin=$3 new_dir=$4
pairs=${5:-3} targets=${6:-sqlite,postgres,mariadb}
out=$(mktemp -d)
ratios=""
one() {
    # $1 binary, $2 checkout, $3 label: prints the seconds it took.
    start=$(date +%s.%N)
    if ! (cd "$2" && "$1" mutate --db "$targets" > "$out/$3.log" 2>&1); then
        echo "$3: mutate failed: see $out/$3.log" >&2
        exit 1
    fi
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
i=1
while [ "$i" -le "$pairs" ]; do
    if [ $((i % 2)) -eq 1 ]; then
        old=$(one "$old_bin" "$old_dir" "old-$i")
        new=$(one "$new_bin" "$new_dir" "new-$i")
    else
        new=$(one "$new_bin" "$new_dir" "new-$i")
        old=$(one "$old_bin" "$old_dir" "old-$i")
    fi
    ratio=$(echo "scale=3; $new / $old" | bc)
    ratios="$ratios $ratio"
    echo "pair $i: old ${old}s new ${new}s new/old ${ratio} (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    i=$((i + 1))
done
median=$(echo "$ratios" | tr ' ' '\n' | grep . | sort -n |
    awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}')
echo "mutate --db $targets: new/old median ${median} over $pairs pairs"
# Every mutate passed: its logs are not needed (a failure keeps them, above).
rm -rf "$out"
