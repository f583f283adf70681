#!/bin/sh
# check_prose.sh — the documentation's sentences stay short: in README.md and every
# docs/*.md, the average sentence is at most 25 words and no sentence has more than 60.
#
#   scripts/check_prose.sh ROOT            README.md and ROOT/docs/*.md
#   scripts/check_prose.sh ROOT FILE...    the given files (paths as given)
#   PM_PROSE_VERBOSE=1 scripts/check_prose.sh ...   also every sentence, as counted
#
# Prints per file its sentence count, average and longest sentence in words, and each
# sentence over 60 words with its file and first line. Exits 1 when any file's average is
# over 25 or any sentence is over 60; 2 on a usage error.
#
# The rules:
# - Prose only. Not counted: fenced code blocks (``` or ~~~ to the matching fence),
#   indented code (a line indented by 4 or more spaces or a tab, after a blank line or
#   another such line, and not inside a list item), tables (lines starting with `|`),
#   HTML comments (<!-- to -->, over any lines), headings (lines starting with `#`) and
#   horizontal rules.
# - A sentence ends at a word that ends with `.`, `!` or `?`, possibly followed by
#   closing characters ) ] " ' * _. Not ends: abbreviations (e.g., i.e., etc., vs., cf.,
#   approx.) and an ellipsis (`...`). A decimal number such as 1.5 is one word and so is
#   no end.
# - A sentence also ends where its paragraph or list item ends: at a blank line, at the
#   start of a list item (`-`, `*`, `+` or `1.`), and at any excluded line (code, table,
#   heading). So a list item or a line without final punctuation followed by a blank
#   line ends a sentence.
# - Words are the whitespace-separated tokens holding a letter or a digit. An inline code
#   span (`...`, any number of backticks, even across a line break) counts as one word. A
#   link [text](target) counts its text only; URLs (http://, https://, <...>) and link
#   targets are not words. Markup characters (* _ >) alone are not words.
[ $# -ge 1 ] || { echo "usage: $0 ROOT [FILE...]" >&2; exit 2; }
[ -d "$1" ] || { echo "$0: $1: not a folder" >&2; exit 2; }
root=$1
shift
if [ $# -eq 0 ]; then
    set -- "$root/README.md" "$root"/docs/*.md
fi
exec /usr/bin/python3 - "$root" "$@" <<'PY'
import os
import re
import sys

MAX_AVG, MAX_ONE = 25, 60
ABBREV = {"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx."}
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
FENCE = re.compile(r"^\s*(```+|~~~+)")
RULE = re.compile(r"^\s*(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
URL = re.compile(r"<?(?:https?|ftp)://[^\s>)]*[^\s>).,;:!?]>?")
END = re.compile(r"[.!?][)\]\"'*_]*$")
WORDY = re.compile(r"[A-Za-z0-9\x00]")


def blocks(path):
    """Yield each run of prose lines (a paragraph or a list item) as [(line_no, text)]."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None        # the fence that opened the current code block
    comment = False     # inside <!-- ... -->
    in_list = False     # the paragraph so far belongs to a list item
    prev_blank = True
    prev_code = False
    cur = []
    for no, line in enumerate(lines, 1):
        # HTML comments, possibly over several lines
        text = ""
        rest = line
        while rest:
            if comment:
                end = rest.find("-->")
                if end < 0:
                    rest = ""
                else:
                    comment = False
                    rest = rest[end + 3:]
            else:
                start = rest.find("<!--")
                if start < 0:
                    text += rest
                    rest = ""
                else:
                    text += rest[:start]
                    comment = True
                    rest = rest[start + 4:]
        if fence:
            m = FENCE.match(line)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        m = FENCE.match(text)
        if m:
            fence = m.group(1)
            if cur:
                yield cur
            cur = []
            prev_blank, prev_code = False, False
            continue
        blank = not text.strip()
        indented = text.startswith("\t") or text.startswith("    ")
        code = indented and (prev_blank or prev_code) and not in_list and not blank
        excluded = (code or text.lstrip().startswith("|") or text.lstrip().startswith("#")
                    or RULE.match(text))
        if blank or excluded:
            if cur:
                yield cur
            cur = []
            if excluded and not code:
                in_list = False
            prev_blank, prev_code = blank, code
            continue
        if LIST_ITEM.match(text):
            if cur:
                yield cur
            cur = []
            in_list = True
            text = LIST_ITEM.sub("", text, count=1)
        elif not indented and prev_blank:
            in_list = False
        cur.append((no, text))
        prev_blank, prev_code = False, False
    if cur:
        yield cur


def sentences(block):
    """Split one prose block into sentences: yield (line_no, word_count, first words)."""
    # one string, with a map from character offset to line number
    text, starts = "", []
    for no, line in block:
        starts.append((len(text), no))
        text += line.strip() + "\n"

    def line_of(offset):
        no = starts[0][1]
        for off, n in starts:
            if off <= offset:
                no = n
        return no

    # Inline code spans become one word each (\x00), links their text, URLs nothing. The
    # removed characters become \x01, which is no word and no space, so a replacement
    # keeps the offsets and the punctuation that follows it stays on its token.
    text = CODE_SPAN.sub(lambda m: "\x00" + "\x01" * (len(m.group(0)) - 1), text)
    text = LINK.sub(lambda m: m.group(1) + "\x01" * (len(m.group(0)) - len(m.group(1))), text)
    text = URL.sub(lambda m: "\x01" * len(m.group(0)), text)
    words, first = [], None
    for m in re.finditer(r"\S+", text):
        tok = m.group(0)
        wordy = WORDY.search(tok)
        if wordy:
            if first is None:
                first = line_of(m.start())
            words.append(tok.replace("\x00", "`code`").replace("\x01", ""))
        bare = tok.replace("\x01", "")
        low = bare.lower().lstrip("(\"'*_").rstrip(")]\"'*_")
        if words and END.search(bare) and low not in ABBREV and not low.endswith("..."):
            yield first, len(words), " ".join(words)
            words, first = [], None
    if words:
        yield first, len(words), " ".join(words)


verbose = os.environ.get("PM_PROSE_VERBOSE") == "1"
status = 0
root = os.path.realpath(sys.argv[1])
for path in sys.argv[2:]:
    real = os.path.realpath(path)
    name = os.path.relpath(real, root) if real.startswith(root + os.sep) else path
    try:
        found = [s for b in blocks(path) for s in sentences(b)]
    except OSError as e:
        print(f"{name}: {e.strerror}", file=sys.stderr)
        status = 1
        continue
    n = len(found)
    total = sum(w for _, w, _ in found)
    avg = total / n if n else 0.0
    longest = max((w for _, w, _ in found), default=0)
    bad = avg > MAX_AVG or longest > MAX_ONE
    print(f"{name}: {n} sentences, average {avg:.1f} words, longest {longest}"
          + ("" if not bad else "  <- over the limits"))
    if avg > MAX_AVG:
        print(f"{name}: average {avg:.1f} words is over {MAX_AVG}", file=sys.stderr)
    for no, w, text in found:
        if verbose:
            print(f"  {name}:{no}: {w}: {text}")
        if w > MAX_ONE:
            start = " ".join(text.split()[:8])
            print(f"{name}:{no}: a sentence of {w} words (over {MAX_ONE}): {start} ...",
                  file=sys.stderr)
    if bad:
        status = 1
sys.exit(status)
PY
