#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Checks that the docs name only paths that exist, so they cannot drift from the tree: every
# `path/with/slash` in backticks, every file name in a folder table row (looked up under
# that row's folders), and every relative link. With no doc named: README.md and every
# docs/*.md. A result directory of perf/run.sh (`perf/results/<date-time>`) is not versioned
# (only perf/results/example is) and is not looked for.
import os
import re
import sys

ROOTS = ("lib/", "app/", "tests/", "dpa_kernels/", "perf/", "scripts/", "conf/", "deploy/",
         "docs/", "cmake/", "python/")
FILE_EXT = (".cc", ".h", ".c", ".py", ".sh", ".json", ".md", ".yaml", ".cmake", ".txt")


def main(root: str, doc: str) -> int:
    path = os.path.join(root, doc)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    errors = []

    def exists(p: str) -> bool:
        p = p.split("#")[0].rstrip("/")
        return os.path.exists(os.path.join(root, p))

    # 1. backticked paths rooted in the tree (a trailing ':' or ',' is prose)
    for m in re.finditer(r"`([^`\s]+)`", text):
        p = m.group(1).rstrip(":,")
        if p.startswith("perf/results/") and not p.startswith("perf/results/example"):
            continue
        if p.startswith(ROOTS) and not any(c in p for c in "<>*{}|"):
            if not exists(p):
                errors.append(f"{doc}: `{p}` does not exist")
    # 2. table rows: file names in the row are looked up under the row's folders
    for line in text.splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split("|")
        folders = [f for f in re.findall(r"`([^`]+)`", cells[1]) if f.startswith(ROOTS)]
        if not folders:
            continue
        for name in re.findall(r"`([\w.\-/]+)`", "|".join(cells[2:])):
            if "/" in name or not name.endswith(FILE_EXT):
                continue
            found = False
            for folder in folders:
                for dirpath, _, files in os.walk(os.path.join(root, folder.rstrip("/"))):
                    if name in files:
                        found = True
                        break
                if found:
                    break
            if not found:
                errors.append(f"{doc}: `{name}` is in no folder of its row ({', '.join(folders)})")
    # 3. relative links
    for m in re.finditer(r"\]\(([^)#\s]+)(#[^)]*)?\)", text):
        target = m.group(1)
        if "://" in target:
            continue
        if not os.path.exists(os.path.normpath(os.path.join(os.path.dirname(path), target))):
            errors.append(f"{doc}: link {target} does not exist")
    for e in errors:
        print(e)
    print(f"{doc}: {'ok' if not errors else str(len(errors)) + ' missing path(s)'}")
    return 1 if errors else 0


if __name__ == "__main__":
    root = sys.argv[1]
    docs = sys.argv[2:] or ["README.md"] + sorted(
        os.path.join("docs", d) for d in os.listdir(os.path.join(root, "docs")) if d.endswith(".md"))
    sys.exit(max(main(root, d) for d in docs))
