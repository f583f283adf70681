#!/bin/sh
# check_function_length.sh — no function of the library and its tools is longer than MAX
# lines (default 80), counted from the line of the function's name to its closing brace as
# universal-ctags reports them (its line: and end: fields). Looks at the *.c files of
# codegen/, codegen/llvm/, runtime/, frontend/, io/, cli/ and python/src/.
#
#   scripts/check_function_length.sh ROOT [MAX]
#
# Prints "LINES FILE FUNCTION" for each longer function, longest first, and exits 1; exits 0
# with a one-line summary when there is none; exits 2 when universal-ctags is missing (or
# `ctags` is another ctags, which has no end: field).
[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: $0 ROOT [MAX]" >&2; exit 2; }
root=$1
max=${2:-80}
case "$max" in
''|*[!0-9]*) echo "$0: MAX must be a number of lines, not '$max'" >&2; exit 2 ;;
esac
cd "$root" || exit 2
# Debian's universal-ctags installs ctags-universal (ctags is an alternative that another
# ctags package may hold)
ctags=$(command -v ctags-universal || command -v ctags || echo ctags)
if ! "$ctags" --version 2>/dev/null | head -n 1 | grep -q "Universal Ctags"; then
    echo "$0: needs universal-ctags as ctags (Debian: apt-get install universal-ctags)" >&2
    exit 2
fi

files=
for dir in codegen codegen/llvm runtime frontend io cli python/src; do
    for f in "$dir"/*.c; do
        [ -f "$f" ] && files="$files $f"
    done
done
[ -n "$files" ] || { echo "$0: no C sources under $root" >&2; exit 2; }

# One tag a line: NAME, FILE, pattern, kind, then the fields (line:N ... end:N) by name.
# shellcheck disable=SC2086 # $files is a list of paths without spaces
tags=$("$ctags" --kinds-C=f --fields=+ne --sort=no -o - $files) || exit 2
long=$(printf '%s\n' "$tags" | awk -F'\t' -v max="$max" '
    NF >= 4 {
        line = 0; end = 0
        for (i = 4; i <= NF; i++) {
            if ($i ~ /^line:/) line = substr($i, 6) + 0
            else if ($i ~ /^end:/) end = substr($i, 5) + 0
        }
        if (line > 0 && end >= line && end - line + 1 > max)
            print end - line + 1, $2, $1
    }' | sort -k1,1nr -k2,2 -k3,3)
if [ -n "$long" ]; then
    printf '%s\n' "$long"
    echo "$(printf '%s\n' "$long" | wc -l) functions over $max lines" >&2
    exit 1
fi
nfun=$(printf '%s\n' "$tags" | grep -c .)
# shellcheck disable=SC2086
nfile=$(printf '%s\n' $files | wc -l)
echo "check_function_length: $nfun functions in $nfile files, none over $max lines"
exit 0
