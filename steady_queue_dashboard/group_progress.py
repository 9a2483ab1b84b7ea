"""The progress bar of a batch or workflow run: succeeded, failed and pending parts."""

from __future__ import annotations

from dataclasses import dataclass

# The bar's width in SVG user units; the parts are whole units so that they add up.
WIDTH = 200


@dataclass(frozen=True)
class ProgressBar:
    total: int
    succeeded: int
    failed: int

    @property
    def pending(self) -> int:
        return max(self.total - self.succeeded - self.failed, 0)

    @property
    def succeeded_width(self) -> int:
        return self._width(self.succeeded)

    @property
    def failed_width(self) -> int:
        return self._width(self.failed)

    @property
    def failed_x(self) -> int:
        return self.succeeded_width

    @property
    def percent_done(self) -> int:
        ended = self.succeeded + self.failed
        return round(100 * ended / self.total) if self.total else 100

    def _width(self, count: int) -> int:
        # Counts are copied as jobs end; clamp so a bar never overflows its track.
        return round(WIDTH * min(count, self.total) / self.total) if self.total else 0
