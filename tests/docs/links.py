"""Check the internal links of a built site: every target file exists and every
``#fragment`` names an element of the target page.

MkDocs' own validation (``validation:`` in mkdocs.yml, an error under ``--strict``)
checks the links written in Markdown; this reads the HTML it wrote, so links made by
the theme, by mkdocstrings and by raw HTML in a page are checked too.
"""

from __future__ import annotations

from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

_EXTERNAL = ("http:", "https:", "mailto:", "data:", "javascript:", "//")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name"):
            if values.get(name):
                self.ids.add(values[name])
        if tag in ("a", "link") and values.get("href"):
            self.links.append(values["href"])


@cache
def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page


def broken_links(site: Path) -> list[str]:
    """Return one line per broken internal link of the site built in ``site``."""
    problems = []
    for page in sorted(site.rglob("*.html")):
        for href in _parse(page).links:
            problem = _problem(site, page, href)
            if problem:
                problems.append(f"{page.relative_to(site)}: {href}: {problem}")
    return problems


def _problem(site: Path, page: Path, href: str) -> str | None:
    if href.startswith(_EXTERNAL):
        return None
    parts = urlsplit(href)
    # An absolute path (the 404 page has them, there being no site_url) is site-relative.
    base = site if parts.path.startswith("/") else page.parent
    path = unquote(parts.path).lstrip("/")
    target = page if not parts.path else (base / path).resolve()
    if target.is_dir():
        target = target / "index.html"
    if not target.is_relative_to(site.resolve()) and target != page:
        return "points outside the site"
    if not target.exists():
        return "no such file"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
        return f"no element with id {fragment!r}"
    return None
