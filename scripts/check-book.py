#!/usr/bin/env python3
"""Offline link check of the built user guide and of the README (make book-check).

usage: check-book.py BOOK_DIR SRC_DIR README...

- BOOK_DIR: the HTML mdBook wrote. Every relative link (`href`, `src`) of every page must
  name a file of the book, and its `#fragment` an `id` in that file (or in the page itself
  for `#fragment` alone). External links (http, https, mailto) are listed, not fetched:
  the check runs offline.
- SRC_DIR: the book's Markdown. Every `.md` file under it must be a chapter of
  SUMMARY.md (a page left out is never built, and links to it would point nowhere).
- README...: Markdown files of the repository (README.md, the chart's README): every
  relative link must name a file or directory of the repository, never a path outside it.

Exits 1 naming every broken link with the page it is on; 0 with a one-line summary.
"""

from __future__ import annotations

import html.parser
import os
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

EXTERNAL = ("http://", "https://", "mailto:", "ftp://")


class Page(html.parser.HTMLParser):
    """The links and the ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"] or "")
        for key in ("href", "src"):
            if tag in ("a", "img") and a.get(key):
                self.links.append(a[key] or "")


def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def check_book(book: Path) -> tuple[list[str], int, set[str]]:
    book = book.resolve()  # a page's own path is compared as the links' resolved targets
    pages = {p: parse(p) for p in book.rglob("*.html")}
    # mdBook's print.html repeats every chapter with rewritten links; 404.html is a template.
    skip = {book / "print.html", book / "404.html"}
    broken, checked, external = [], 0, set()
    for path, page in pages.items():
        if path in skip:
            continue
        for link in page.links:
            if link.startswith(EXTERNAL):
                external.add(link)
                continue
            if link.startswith("javascript:"):
                continue
            checked += 1
            parts = urlsplit(link)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            where = f"{path.relative_to(book)}: {link}"
            if not str(target).startswith(str(book.resolve())):
                broken.append(f"{where} (leaves the book)")
            elif not target.exists():
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no anchor #{parts.fragment})")
    return broken, checked, external


def check_summary(src: Path) -> list[str]:
    summary = (src / "SUMMARY.md").read_text(encoding="utf-8")
    listed = {os.path.normpath(m) for m in re.findall(r"\]\(([^)#]+\.md)\)", summary)}
    missing = []
    for md in sorted(src.rglob("*.md")):
        rel = os.path.normpath(md.relative_to(src).as_posix())
        if rel != "SUMMARY.md" and rel not in listed:
            missing.append(f"{src / rel}: not a chapter of SUMMARY.md (it would not be built)")
    return missing


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def check_markdown(path: Path, root: Path) -> tuple[list[str], int]:
    text = path.read_text(encoding="utf-8")
    # Links inside code are not links.
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    broken, checked = [], 0
    for m in LINK.finditer(text):
        link = m.group(1) or m.group(2)
        if link.startswith(EXTERNAL) or link.startswith("#"):
            continue
        checked += 1
        target = (path.parent / unquote(urlsplit(link).path)).resolve()
        where = f"{path.relative_to(root)}: {link}"
        if not str(target).startswith(str(root.resolve()) + os.sep):
            broken.append(f"{where} (outside the repository)")
        elif not target.exists():
            broken.append(f"{where} (no such file)")
    return broken, checked


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    book, src = Path(argv[1]), Path(argv[2])
    root = Path.cwd().resolve()
    if not (book / "index.html").exists():
        print(f"{book}: no index.html; build the book first (mdbook build docs)", file=sys.stderr)
        return 1
    broken, checked, external = check_book(book)
    broken += check_summary(src)
    for md in argv[3:]:
        b, c = check_markdown(Path(md).resolve(), root)
        broken += b
        checked += c
    if broken:
        for b in broken:
            print(f"broken link: {b}", file=sys.stderr)
        print(f"*** {len(broken)} broken link(s); fix them or the page they point at ***", file=sys.stderr)
        return 1
    print(f"book links: {checked} relative links hold; {len(external)} external links not fetched (offline)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
