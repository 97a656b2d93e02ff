#!/usr/bin/env python3
"""function_size.py - issue 37 item 5's rule kept: no function in src/ over
100 lines (signature to closing brace) or with a cyclomatic complexity over
25 (1 + each if, for, while, case, &&, || and ?: the count lizard makes).
Long functions are where the risk is: a stranger must be able to read one
on a screen or two.

Functions are found as the code base writes them: a definition whose
signature starts a line and whose body opens with a '{' alone at the start
of a line and ends at the first '}' at the start of a line. Comments,
strings and character literals are blanked before counting.

A function listed in KNOWN (file, name: why it is left) may exceed; one
listed that no longer exceeds fails too, so the list stays exact.

Usage: function_size.py [ROOT]. Exit 0 clean, 1 otherwise."""
import os
import re
import sys

MAX_LINES = 100
MAX_CCN = 25

KNOWN = {
}

BRANCH = re.compile(r"\b(?:if|for|while|case)\b|&&|\|\||\?")
NAME = re.compile(r"(\w+)\s*\($")


def blank(text):
    """Comments, strings and character literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(q + " " * (j - i - 1) + q)
            i = j + 1
            continue
        else:
            out.append(text[i])
            i += 1
            continue
        out.append("".join(c if c == "\n" else " " for c in text[i:j]))
        i = j
    return "".join(out)


def functions(text):
    """(name, first line, lines, ccn) of each definition in text."""
    lines = blank(text).split("\n")
    found, i = [], 0
    while i < len(lines):
        if lines[i] != "{":
            i += 1
            continue
        # the signature: the lines above up to one that starts at column 0
        start = i - 1
        while start > 0 and (not lines[start] or lines[start][0] in " \t)"):
            start -= 1
        sig = " ".join(l.strip() for l in lines[start:i])
        m = NAME.search(sig[:sig.find("(") + 1]) if "(" in sig else None
        end = i + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        if m:
            body = "\n".join(lines[i:end + 1])
            found.append((m.group(1), start + 1, end - start + 1,
                          1 + len(BRANCH.findall(body))))
        i = end + 1
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    over, seen = [], set()
    for dirpath, _, files in sorted(os.walk(os.path.join(root, "src"))):
        for f in sorted(files):
            if not f.endswith((".c", ".cu")):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for name, line, n, ccn in functions(text):
                if n <= MAX_LINES and ccn <= MAX_CCN:
                    continue
                if (rel, name) in KNOWN:
                    seen.add((rel, name))
                    continue
                over.append(f"{rel}:{line}: {name}: {n} lines, cyclomatic {ccn} "
                            f"(at most {MAX_LINES} and {MAX_CCN}: split it)")
    stale = [f"{f}: {n}: listed in KNOWN but within the limits now: remove it "
             f"from tests/function_size.py" for (f, n) in sorted(set(KNOWN) - seen)]
    for line in over + stale:
        print(line)
    print(f"function_size: {len(over)} over the limits, {len(stale)} stale, "
          f"{len(seen)} known")
    return 1 if over or stale else 0


if __name__ == "__main__":
    sys.exit(main())
