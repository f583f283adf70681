#!/bin/sh
# count_builder_lines.sh — lines of a pipeline's definition, one rule for PolyMage and
# Halide (docs/jit.md's line counts): the non-blank, non-comment lines from the first
# builder call to the statement that gives the output, and the widest of them.
#  - PolyMage (.c): from the line that calls pm_ctx_new to the end of the statement that
#    calls pm_pipeline_new (its closing ";");
#  - Halide (.cpp): from the line that declares the ImageParam to the last line before
#    the function's `return` (the output Func's definition; bench/lines).
#
#   scripts/count_builder_lines.sh [--max N] [--width W] FILE...
#
# Prints "FILE: L lines, widest C columns" per file. With --max N (and --width W,
# default 100) exits 1 when a file has more than N lines or a line wider than W, or when
# it has no such span.
max=""
width=100
while [ $# -gt 0 ]; do
    case "$1" in
    --max) max="$2"; shift 2 ;;
    --width) width="$2"; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--max N] [--width W] FILE..." >&2; exit 2; }
status=0
for f in "$@"; do
    case "$f" in *.cpp) halide=1 ;; *) halide=0 ;; esac
    out=$(awk -v halide=$halide '
        !started && ((!halide && /pm_ctx_new\(/) || (halide && /^[ \t]*ImageParam[ \t]/)) {
            started = 1
        }
        started && !done && halide && /^[ \t]*return[ \t{(]/ { done = 1 }
        started && !done {
            line = $0
            # comments: whole-line // and /* ... */ (also spread over lines)
            if (incomment) { if (line ~ /\*\//) { incomment = 0 } ; next }
            if (line ~ /^[ \t]*\/\//) next
            if (line ~ /^[ \t]*\/\*/) { if (line !~ /\*\//) incomment = 1; next }
            if (line ~ /^[ \t]*$/) next
            n++
            if (length(line) > wide) wide = length(line)
            if (!halide && line ~ /pm_pipeline_new\(/) inpipe = 1
            if (inpipe && line ~ /;[ \t]*(\/\/.*|\/\*.*)?$/) done = 1
        }
        END { if (!done) print "none"; else print n, wide }' "$f")
    if [ "$out" = none ]; then
        echo "$f: no pm_ctx_new ... pm_pipeline_new (or ImageParam ... return) span" >&2
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
