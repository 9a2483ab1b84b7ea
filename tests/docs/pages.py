"""The documentation's pages and the fenced code blocks in them.

A block preceded by the line ``<!-- skip-test -->`` (blank lines between allowed) is
left out of the runs: code that needs a service the tests do not have (Celery, Sentry)
or shows a file of another project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
SKIP_MARKER = "<!-- skip-test -->"

# An opening fence: three or more backticks, an optional language, nothing else.
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,})(?P<language>[\w+-]*)\s*$")


@dataclass(frozen=True, kw_only=True)
class Block:
    language: str
    code: str
    line: int  # of the opening fence, 1-based
    skipped: bool


def tutorial() -> Path:
    return DOCS / "tutorial.md"


def how_to_pages() -> list[Path]:
    return sorted((DOCS / "how-to").glob("*.md"))


def blocks(page: Path, language: str | None = None) -> list[Block]:
    """Return the page's fenced blocks in order (of ``language`` only, when given)."""
    found = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = _closing_line(lines, index, opening)
        indent = len(opening["indent"])
        code = "\n".join(line[indent:] for line in lines[index + 1 : end])
        found.append(
            Block(
                language=opening["language"],
                code=code + "\n",
                line=index + 1,
                skipped=_marked_skip(lines, index),
            )
        )
        index = end + 1
    return [block for block in found if language is None or block.language == language]


def _closing_line(lines: list[str], start: int, opening: re.Match) -> int:
    closing = opening["indent"] + opening["fence"]
    for index in range(start + 1, len(lines)):
        if lines[index].rstrip() == closing:
            return index
    raise AssertionError(f"line {start + 1}: a code block is never closed")


def _marked_skip(lines: list[str], fence: int) -> bool:
    index = fence - 1
    while index >= 0 and not lines[index].strip():
        index -= 1
    return index >= 0 and lines[index].strip() == SKIP_MARKER
