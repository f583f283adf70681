#!/bin/sh
# check_line_counts.sh — docs/jit.md's table of line counts still matches its files: for
# each filter NAME of samples/examples, the row starting "| [NAME.c]" gives the lines of
# samples/examples/NAME.c, bench/lines/NAME_plain.c, bench/lines/NAME_halide.cpp and the
# function NAME of python/polymage/filters.py, each counted by scripts/count_builder_lines.sh
# (one rule for all four).
#
#   scripts/check_line_counts.sh ROOT
#
# Exits 1 naming each figure that differs.
[ $# -eq 1 ] || { echo "usage: $0 ROOT" >&2; exit 2; }
root=$1
count() { sh "$root/scripts/count_builder_lines.sh" "$1" | sed -n 's/.*: \([0-9]*\) lines.*/\1/p'; }
status=0
for name in blur_rgb sobel hist_eq; do
    row=$(grep "^| \[$name\.c\]" "$root/docs/jit.md")
    [ -n "$row" ] || { echo "docs/jit.md: no row for $name.c" >&2; status=1; continue; }
    col=3
    for f in "samples/examples/$name.c" "bench/lines/${name}_plain.c" \
             "bench/lines/${name}_halide.cpp" "python/polymage/filters.py:$name"; do
        doc=$(echo "$row" | awk -F'|' -v c=$col '{ gsub(/ /, "", $c); print $c }')
        got=$(count "$root/$f")
        if [ "$doc" != "$got" ]; then
            echo "docs/jit.md says $doc lines for $f, the script counts ${got:-none}" >&2
            status=1
        else
            echo "$f: $got lines, as docs/jit.md says"
        fi
        col=$((col + 1))
    done
done
exit $status
