#!/bin/sh
# count_builder_lines.sh — lines of builder code of an example, the measure of issue 11:
# the non-blank, non-comment lines from the first line that calls pm_ctx_new to the end
# of the statement that calls pm_pipeline_new (its closing ";"), and the widest of them.
#
#   scripts/count_builder_lines.sh [--max N] [--width W] FILE...
#
# Prints "FILE: L lines, widest C columns" per file. With --max N (and --width W,
# default 100) exits 1 when a file has more than N lines or a line wider than W, or when
# it has no pm_ctx_new ... pm_pipeline_new span.
max=""
width=100
while [ $# -gt 0 ]; do
    case "$1" in
    --max) max="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--max N] [--width W] FILE..." >&2; exit 2; }
status=0
for f in "$@"; do
    out=$(awk '
        /pm_ctx_new\(/ && !started { started = 1 }
        started && !done {
            line = $0
            # comments: whole-line // and /* ... */ (also spread over lines)
            if (incomment) { if (line ~ /\*\//) { incomment = 0 } ; next }
            if (line ~ /^[ \t]*\/\//) next
            if (line ~ /^[ \t]*\/\*/) { if (line !~ /\*\//) incomment = 1; next }
            if (line ~ /^[ \t]*$/) next
            n++
            if (length(line) > wide) wide = length(line)
            if (line ~ /pm_pipeline_new\(/) inpipe = 1
            if (inpipe && line ~ /;[ \t]*(\/\/.*|\/\*.*)?$/) done = 1
        }
        END { if (!done) print "none"; else print n, wide }' "$f")
    if [ "$out" = none ]; then
        echo "$f: no pm_ctx_new ... pm_pipeline_new span" >&2
        status=1
        continue
    fi
    lines=${out% *}
    wide=${out#* }
    echo "$f: $lines lines, widest $wide columns"
    if [ -n "$max" ] && { [ "$lines" -gt "$max" ] || [ "$wide" -gt "$width" ]; }; then
        echo "$f: more than $max lines or wider than $width columns" >&2
        status=1
    fi
done
exit $status
