#!/usr/bin/env python3
"""Fails when a relative link in the book (docs/src) or in README.md points
at a file that does not exist, or at a heading a chapter does not have.

mdBook itself fails on missing chapters and includes, not on broken links.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """The heading ids mdBook and GitHub give `path`'s headings."""
    out, in_code = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        m = None if in_code else re.match(r"^#{1,6} (.*)", line)
        if m:
            slug = re.sub(r"[^a-z0-9 _-]", "", m.group(1).strip().lower()).replace(" ", "-")
            out.add(slug)
    return out


def links(path: Path):
    in_code = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        for m in LINK.finditer(line):
            yield number, m.group(1)


def main() -> int:
    files = sorted((ROOT / "docs" / "src").rglob("*.md")) + [ROOT / "README.md"]
    broken = []
    for f in files:
        for number, link in links(f):
            if re.match(r"^[a-z]+:", link):
                continue
            target, _, anchor = link.partition("#")
            dest = (f.parent / target).resolve() if target else f
            where = f"{f.relative_to(ROOT)}:{number}: {link}"
            if not dest.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where} (no such heading)")
    for b in broken:
        print(b, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
