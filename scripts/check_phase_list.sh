#!/bin/sh
# check_phase_list.sh — docs/architecture.md's phase table lists the compiler's steps in
# the order of codegen/driver.c's table, as `polymage explain` prints it (the one list).
#
#   scripts/check_phase_list.sh ROOT POLYMAGE
#
# Exits 1 naming both lists when they differ.
[ $# -eq 2 ] || { echo "usage: $0 ROOT POLYMAGE" >&2; exit 2; }
steps=$("$2" explain harris --size 16x16 --no-diagram 2>/dev/null |
        sed -n 's/^ *[0-9][0-9]* \([a-z]*\) .*/\1/p' | tr '\n' ' ')
[ -n "$steps" ] || { echo "$2 explain printed no steps" >&2; exit 1; }
first=${steps%% *}
last=$(echo "$steps" | awk '{ print $NF }')
docs=$(sed -n "/^| \`$first\` |/,/^| \`$last\` |/p" "$1/docs/architecture.md" |
       sed -n 's/^| `\([a-z]*\)` |.*/\1/p' | tr '\n' ' ')
if [ "$steps" != "$docs" ]; then
    echo "the compiler's steps: $steps" >&2
    echo "docs/architecture.md: $docs" >&2
    exit 1
fi
echo "docs/architecture.md lists the steps in order: $steps"
