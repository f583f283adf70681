#!/usr/bin/env bash
# A long fuzz campaign in short chunks, each under the machine's shared lock so builds and
# timings of others interleave: scripts/fuzz-campaign.sh BUILD_DIR FIRST_SEED CASES [CHUNK]
# Prints each chunk's summary line (seeds, counts, seconds) and a total; exits nonzero if
# any case failed (its seed and builder code are in the log above the summary).
set -uo pipefail
build=${1:?build dir}; first=${2:?first seed}; total=${3:?cases}; chunk=${4:-250}
bin=$(mktemp /tmp/pm_fuzz.XXXXXX)
cp "$build/test/pm_fuzz" "$bin" && chmod +x "$bin"   # a rebuild during the campaign does not change it
status=0; done_cases=0; start=$(date +%s)
while [ "$done_cases" -lt "$total" ]; do
  n=$(( total - done_cases < chunk ? total - done_cases : chunk ))
  flock /tmp/pm-bench.lock nice "$bin" --seed $(( first + done_cases )) --cases "$n" || status=1
  done_cases=$(( done_cases + n ))
done
echo "campaign: seeds $first..$(( first + total - 1 )), $total cases, $(( $(date +%s) - start )) s wall, status $status"
rm -f "$bin"
exit $status
