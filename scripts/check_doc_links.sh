#!/bin/sh
# check_doc_links.sh — every Markdown link of the given files points to a file or folder
# inside the repository (no web links, nothing outside it such as ../shared), and no
# file names the out-of-tree app definitions instead of docs/apps.md.
#
#   scripts/check_doc_links.sh ROOT FILE...
#
# Exits 1 naming each bad link.
[ $# -ge 2 ] || { echo "usage: $0 ROOT FILE..." >&2; exit 2; }
root=$(cd "$1" && pwd -P) || exit 2
shift
status=0
count=0
for f in "$@"; do
    dir=$(cd "$(dirname "$f")" && pwd -P)
    if grep -n "shared/polymage-apps\|polymage-apps\.md" "$f" >/dev/null; then
        echo "$f: names polymage-apps.md (the definitions are docs/apps.md)" >&2
        status=1
    fi
    for target in $(grep -o '](\([^)[:space:]]*\))' "$f" | sed -e 's/^](//' -e 's/)$//'); do
        count=$((count + 1))
        case "$target" in
        \#*) continue ;;
        *://*|mailto:*) echo "$f: link outside the repository: $target" >&2; status=1; continue ;;
        esac
        path=${target%%#*}
        if [ ! -e "$dir/$path" ]; then
            echo "$f: link to a missing file: $target" >&2
            status=1
            continue
        fi
        real=$(cd "$(dirname "$dir/$path")" && pwd -P)
        case "$real/" in
        "$root"/*) ;;
        *) echo "$f: link outside the repository: $target" >&2; status=1 ;;
        esac
    done
done
echo "$count links checked"
exit $status
