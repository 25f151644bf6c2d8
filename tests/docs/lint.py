#!/usr/bin/env python3
"""docs_lint SOURCE_DIR: README under 15,000 characters, docs/*.md under 25,000 bytes, no merge
conflict markers in the tracked text files, and every relative link of the tracked Markdown
files resolving to a file or folder of the tree.  Prints each problem; exit 1 if any."""
import os
import re
import subprocess
import sys

root = os.path.abspath(sys.argv[1])
problems = []
files = subprocess.run(["git", "-C", root, "ls-files"], stdout=subprocess.PIPE, text=True,
                       check=False).stdout.split()
if not files:  # not a git checkout (a source tarball): the files on disk
    files = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
             if "/.git" not in d and "/build" not in d for f in fs]

with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
    n = len(f.read())
if n > 15000:
    problems.append("README.md: %d characters, more than 15,000" % n)
for name in sorted(os.listdir(os.path.join(root, "docs"))):
    if name.endswith(".md"):
        size = os.path.getsize(os.path.join(root, "docs", name))
        if size > 25000:
            problems.append("docs/%s: %d bytes, more than 25,000" % (name, size))

marker = re.compile(r"^(<<<<<<< |>>>>>>> |=======$)", re.M)
link = re.compile(r"\]\(([^)\s]+)\)")
for rel in files:
    path = os.path.join(root, rel)
    if not os.path.isfile(path) or os.path.getsize(path) > 2 << 20:
        continue
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (UnicodeDecodeError, OSError):
        continue  # binary
    m = marker.search(text)
    if m and not rel.startswith("tests/docs/"):
        line = text[:m.start()].count("\n") + 1
        problems.append("%s:%d: a merge conflict marker" % (rel, line))
    if not rel.endswith(".md"):
        continue
    for m in link.finditer(text):
        target = m.group(1).split("#")[0]
        if not target or re.match(r"^[a-z]+:", target):
            continue  # an anchor in the same file, or a URL
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), target))):
            line = text[:m.start()].count("\n") + 1
            problems.append("%s:%d: the link %s leads nowhere" % (rel, line, m.group(1)))

for p in problems:
    print("FAIL " + p)
print("docs_lint: %d problems in %d files" % (len(problems), len(files)))
sys.exit(1 if problems else 0)
