#!/bin/sh
# check_header_promises.sh — every header's promise is 1 to 5 sentences.
#
#   scripts/check_header_promises.sh ROOT [-v] [--skip PATH...]
#
# Looks at ROOT's codegen/*.h, codegen/llvm/*.h, runtime/*.h, frontend/*.h and include/*.h.
# In each, it counts the sentences of the first comment after "Promise:", or of the whole
# first comment when it has no "Promise:". --skip leaves out the given headers (paths
# relative to ROOT); a folder skips every header in it. -v also prints every header's count.
#
# Prints "N FILE" for each header of more than 5 sentences, and exits 1 when there is one.
# Otherwise prints a one-line summary and exits 0. Exits 2 on a usage error.
#
# The rules:
# - The first comment is the first /* ... */ of the file. Its leading " * " are dropped.
# - A sentence ends at a word that ends with `.`, `!` or `?`, possibly followed by closing
#   characters ) ] " ' `. So ". ", ".\n" and ".)" end one, and so does the comment's end.
# - Not ends: e.g., i.e., etc., vs., cf., dots alone (.. and ...) and a lone ? or !
#   (a ? b : c). A period inside a word is no end either: 1.5, poly.c, x.y.
# - Words left after the last end (a list without a final period) count as one sentence.
MAX=5
[ $# -ge 1 ] || { echo "usage: $0 ROOT [-v] [--skip PATH...]" >&2; exit 2; }
[ -d "$1" ] || { echo "$0: $1: not a folder" >&2; exit 2; }
exec /usr/bin/python3 - "$MAX" "$@" <<'PY'
import glob
import os
import re
import sys

MAX = int(sys.argv[1])
root = sys.argv[2]
verbose = False
skips = []
args = sys.argv[3:]
while args:
    a = args.pop(0)
    if a == "-v":
        verbose = True
    elif a == "--skip":
        while args and not args[0].startswith("-"):
            skips.append(os.path.normpath(args.pop(0)))
    else:
        print(f"check_header_promises.sh: unknown argument {a!r}", file=sys.stderr)
        sys.exit(2)

ABBREV = {"e.g.", "i.e.", "etc.", "vs.", "cf."}
END = re.compile(r"[.!?][)\]\"'`]*$")
WORDY = re.compile(r"[A-Za-z0-9]")


def first_comment(text):
    """The text of the file's first /* ... */ comment, without the comment markers."""
    start = text.find("/*")
    if start < 0:
        return ""
    end = text.find("*/", start + 2)
    body = text[start + 2:end if end >= 0 else len(text)]
    return "\n".join(re.sub(r"^\s*\*(?!/)", "", line) for line in body.split("\n"))


def sentences(text):
    """The sentences of text, each as a string."""
    out, words = [], []
    for tok in text.split():
        words.append(tok)
        low = tok.lower().lstrip("([\"'`").rstrip(")]\"'`")
        if END.search(tok) and low not in ABBREV and re.search(r"[A-Za-z0-9)\]\"'`][.!?]$", low) \
                and any(WORDY.search(w) for w in words):
            out.append(" ".join(words))
            words = []
    if any(WORDY.search(w) for w in words):
        out.append(" ".join(words))
    return out


def skipped(rel):
    return any(rel == s or rel.startswith(s + os.sep) for s in skips)


headers = []
for d in ("codegen", "codegen/llvm", "runtime", "frontend", "include"):
    headers += sorted(glob.glob(os.path.join(root, d, "*.h")))
if not headers:
    print(f"check_header_promises.sh: no headers under {root}", file=sys.stderr)
    sys.exit(2)

over, counted, nskipped = [], 0, 0
for path in headers:
    rel = os.path.relpath(path, root)
    if skipped(rel):
        nskipped += 1
        continue
    with open(path, encoding="utf-8") as f:
        comment = first_comment(f.read())
    at = comment.find("Promise:")
    found = sentences(comment[at + len("Promise:"):] if at >= 0 else comment)
    counted += 1
    if verbose:
        print(f"{len(found)} {rel}")
        if os.environ.get("PM_PROMISE_SENTENCES") == "1":
            for s in found:
                print(f"    {s}")
    if len(found) > MAX:
        over.append((len(found), rel))

for n, rel in over:
    if not verbose:
        print(f"{n} {rel}")
if over:
    print(f"{len(over)} of {counted} headers have a promise of more than {MAX} sentences",
          file=sys.stderr)
    sys.exit(1)
print(f"{counted} header{'s' if counted != 1 else ''}, every promise at most {MAX} sentences"
      + (f" ({nskipped} skipped)" if nskipped else ""))
PY
