#!/bin/sh
# check_doc_fragments.sh — every ```c fragment of a document appears verbatim (ignoring
# indentation and blank lines) in one of the given source files, so the code a guide
# shows is code that compiles and runs in a test.
#
#   scripts/check_doc_fragments.sh DOC.md SOURCE.c...
#
# Exits 1 naming the first line of each fragment that is not found.
[ $# -ge 2 ] || { echo "usage: $0 DOC.md SOURCE.c..." >&2; exit 2; }
doc=$1
shift
norm() { sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$@" | grep -v '^$' | tr '\n' '\001'; }
src=$(for f in "$@"; do norm "$f"; done)
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# one file per fragment
awk -v dir="$tmp" '
    /^```c[[:space:]]*$/ { n++; inside = 1; file = sprintf("%s/%03d", dir, n); next }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }' "$doc"
status=0
count=0
for f in "$tmp"/*; do
    [ -e "$f" ] || continue
    count=$((count + 1))
    frag=$(norm "$f")
    case "$src" in
    *"$frag"*) ;;
    *) echo "$doc: fragment not found in the sources: $(grep -v '^[[:space:]]*$' "$f" | head -1)" >&2
       status=1 ;;
    esac
done
echo "$doc: $count fragments checked"
exit $status
