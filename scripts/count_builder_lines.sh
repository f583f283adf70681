#!/bin/sh
# count_builder_lines.sh — lines of a pipeline's definition, one rule for PolyMage and
# Halide (docs/jit.md's line counts): the non-blank, non-comment lines from the first
# builder call to the statement that gives the output, and the widest of them.
#  - PolyMage (.c): from the line that calls pm_ctx_new to the end of the statement that
#    calls pm_pipeline_new (its closing ";");
#  - Halide (.cpp): from the line that declares the ImageParam to the last line before
#    the function's `return` (the output Func's definition; bench/lines);
#  - Python (FILE.py:FUNC, the function FUNC of FILE.py): from the line that makes the
#    Context to the end of the statement that calls Pipeline( (python/polymage/filters.py).
#
#   scripts/count_builder_lines.sh [--max N] [--width W] FILE[.py:FUNC]...
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
    func=""
    case "$f" in
    *.cpp) halide=1 ;;
    *.py:*) halide=0 func=${f##*:} f=${f%:*} ;;
    *) halide=0 ;;
    esac
    out=$(awk -v halide=$halide -v func="$func" '
        func != "" {
            # Python: only inside "def FUNC(", from Context( to the Pipeline( statement
            if (!infunc) { if ($0 ~ "^def " func "\\(") infunc = 1; next }
            if (done) next
            if (!started && $0 ~ /Context\(/) started = 1
            if (!started || $0 ~ /^[ \t]*(#.*)?$/) next
            n++
            if (length($0) > wide) wide = length($0)
            if ($0 ~ /Pipeline\(/) inpipe = 1
            if (inpipe) { depth += gsub(/\(/, "(") - gsub(/\)/, ")"); if (depth == 0) done = 1 }
            next
        }
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
        echo "$f${func:+:$func}: no pm_ctx_new ... pm_pipeline_new (ImageParam ... return, Context ... Pipeline) span" >&2
        status=1
        continue
    fi
    lines=${out% *}
    wide=${out#* }
    f=$f${func:+:$func}
    echo "$f: $lines lines, widest $wide columns"
    if [ -n "$max" ] && { [ "$lines" -gt "$max" ] || [ "$wide" -gt "$width" ]; }; then
        echo "$f: more than $max lines or wider than $width columns" >&2
        status=1
    fi
done
exit $status
