#!/usr/bin/env python3
"""Relative links of every tracked markdown file: the file each one names
exists, and a #fragment into a markdown file names one of its headings (as
GitHub makes anchors: lower case, punctuation dropped, spaces to hyphens,
-1, -2 for repeats). Prints one line per broken link, exits 1 if any (CI).
    python3 scripts/check_links.py"""
import os
import re
import subprocess
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fence = {}, set(), False
        for line in open(path, encoding="utf-8"):
            if line.startswith("```"):
                fence = not fence
            m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
                n = seen.get(slug, 0)
                seen[slug] = n + 1
                out.add(slug if n == 0 else "%s-%d" % (slug, n))
        cache[path] = out
    return cache[path]


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = subprocess.run(["git", "ls-files", "*.md"], capture_output=True, text=True, check=True).stdout.split()
    bad = 0
    for md in files:
        fence = False
        for no, line in enumerate(open(md, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = not fence
            if fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
                    continue
                name, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(md), name)) if name else md
                why = None
                if not os.path.exists(dest):
                    why = "no such file"
                elif frag and dest.endswith(".md") and frag not in anchors(dest):
                    why = "no heading #%s in %s" % (frag, dest)
                if why:
                    print("links: %s:%d: %s: %s" % (md, no, target, why))
                    bad = 1
    if not bad:
        print("links: every relative link of %d markdown files resolves" % len(files))
    return bad


if __name__ == "__main__":
    sys.exit(main())
