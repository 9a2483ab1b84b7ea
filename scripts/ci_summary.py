"""Sum up CI's stages and pytest runs, and check that the browser tests ran.

Usage: python scripts/ci_summary.py [--require-browser] NAME:EXIT_CODE[:JUNIT_XML]...

Prints one line per stage, then a last line ``total: N passed, N failed, N skipped``
over every JUnit report. A stage that failed without a failing test in its report
(lint, an install step, pytest collecting no tests) counts as one failure there, so
that the last line never reads "0 failed" for a red run. With --require-browser,
a run in which no test under tests/browser/ ran (passed or failed, not skipped)
counts as a failure too. Exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    browser_ran: int = 0

    def add(self, other: Counts) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        self.browser_ran += other.browser_ran


def count(report: Path) -> Counts:
    """Count the outcomes of the test cases in one JUnit XML report."""
    counts = Counts()
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = {child.tag for child in case} & {"failure", "error", "skipped"}
        if outcome & {"failure", "error"}:
            counts.failed += 1
        elif outcome:
            counts.skipped += 1
        else:
            counts.passed += 1
        if "skipped" not in outcome and case.get("classname", "").startswith("tests.browser."):
            counts.browser_ran += 1
    return counts


def summarize(stage: str, total: Counts) -> bool:
    """Print one stage's line, add its tests to ``total``; return whether it passed."""
    name, code, *report = stage.split(":", 2)
    counts = count(Path(report[0])) if report and Path(report[0]).exists() else Counts()
    total.add(counts)
    ran_nothing = bool(report) and counts == Counts()
    passed = code == "0" and not ran_nothing
    outcome = "ok" if passed else f"FAILED (exit {code})"
    if ran_nothing:
        outcome += "; pytest ran no tests"
    elif report:
        outcome += f"; {counts.passed} passed, {counts.failed} failed, {counts.skipped} skipped"
    print(f"  {name}: {outcome}")
    if not passed and counts.failed == 0:
        total.failed += 1
    return passed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("stages", nargs="+")
    parser.add_argument("--require-browser", action="store_true")
    options = parser.parse_args()

    total = Counts()
    green = all([summarize(stage, total) for stage in options.stages])
    if options.require_browser and total.browser_ran == 0:
        print("  browser tests: FAILED: no test under tests/browser/ ran in any run")
        total.failed += 1
        green = False
    print(f"total: {total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
