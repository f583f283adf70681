#!/bin/sh
# check_call_graph.sh — the calls between the files of runtime/ run one way: the graph whose
# nodes are runtime/*.c and whose edges are "a function of a.c calls a function defined in
# b.c" has no cycle. cscope finds the calls; a name passed as a value (a thread's start
# routine, a callback) is not a call, and a static function counts only in its own file.
#
#   scripts/check_call_graph.sh ROOT
#
# Exits 0 printing the graph, one "a.c -> b.c" line per edge; exits 1 printing each cycle
# found as "cycle: a.c -> b.c -> a.c"; exits 2 when cscope is missing or finds no call
# between files (then something is wrong with the script, not with the code).
[ $# -eq 1 ] || { echo "usage: $0 ROOT" >&2; exit 2; }
cd "$1/runtime" || exit 2
command -v cscope >/dev/null 2>&1 || {
    echo "$0: needs cscope (Debian: apt-get install cscope)" >&2
    exit 2
}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
ls ./*.c | sed 's|^\./||' >"$tmp/files"
# -c: the database as text, whose "<TAB>$NAME" lines are the function definitions.
cscope -b -c -k -u -f "$tmp/db" -i "$tmp/files" || exit 2
awk 'substr($0, 1, 2) == "\t$" { print substr($0, 3) }' "$tmp/db" | sort -u >"$tmp/names"
# One query per function (-l reads them from stdin): "1NAME" its definitions and
# "3NAME" its callers. Each answer starts with a line ">> ..." (">> cscope: N lines", or
# ">> Unable to search database" when there is none), then N lines "FILE NAME LINE
# TEXT", where NAME is the definition's own or the calling function's.
sed 's/^/1/' "$tmp/names" | cscope -d -l -f "$tmp/db" >"$tmp/defs" || exit 2
sed 's/^/3/' "$tmp/names" | cscope -d -l -f "$tmp/db" >"$tmp/calls" || exit 2

awk -v names="$tmp/names" '
    BEGIN {
        while ((getline line < names) > 0)
            query[++nq] = line
    }
    FNR == 1 { pass++; q = 0 }
    /^>> / { q++; next }
    # Definitions: a static one is seen from its own file only.
    pass == 1 {
        text = $0
        sub(/^[^ ]+ [^ ]+ [0-9]+ /, "", text)
        if (index(text, query[q] "(") == 0)
            next
        local[$1, query[q]] = 1
        if (text !~ /^static[ \t]/)
            owner[query[q]] = $1
        next
    }
    # Calls: $1 calls query[q].
    pass == 2 {
        callee = query[q]
        if (local[$1, callee] || !(callee in owner) || owner[callee] == $1)
            next
        if (($1, owner[callee]) in seen)
            next
        seen[$1, owner[callee]] = 1
        nedges++
        from[nedges] = $1
        to[nedges] = owner[callee]
        adj[$1] = adj[$1] " " owner[callee]
        node[$1] = 1
        node[owner[callee]] = 1
    }
    # Depth-first search; a grey node reached again closes a cycle.
    function visit(n, depth,    list, k, i, m, path) {
        colour[n] = 1
        stack[depth] = n
        k = split(adj[n], list, " ")
        for (i = 1; i <= k; i++) {
            m = list[i]
            if (colour[m] == 1) {
                path = m
                for (j = depth; stack[j] != m; j--)
                    path = stack[j] " -> " path
                print "cycle: " m " -> " path
                cycles++
            } else if (colour[m] == 0)
                visit(m, depth + 1)
        }
        colour[n] = 2
    }
    END {
        if (nedges == 0) {
            print "check_call_graph: cscope found no call between files of runtime/" > "/dev/stderr"
            exit 2
        }
        for (n in node)
            colour[n] = 0
        cycles = 0
        for (n in node)
            if (colour[n] == 0)
                visit(n, 1)
        if (cycles > 0)
            exit 1
        for (i = 1; i <= nedges; i++)
            print from[i] " -> " to[i] | "sort"
        close("sort")
    }
' "$tmp/defs" "$tmp/calls"
