"""How long a worker that still has idle threads waits before its next poll.

What it should wait depends on what else wakes it: ``choose()`` picks one of three.

- ``Fixed``: woken by PostgreSQL's NOTIFY (``listener``), it polls every
  ``polling_interval`` only for what sends no notification.
- ``Signalled``: woken by a write to its SQLite database (``change_watcher``), it need
  not poll while nothing is written; it still does every ``SIGNALLED_POLL_INTERVAL``
  (or ``polling_interval`` if longer), in case a write went unseen.
- ``Adaptive``: nothing wakes it (MySQL, MariaDB, PostgreSQL without LISTEN). After
  a poll that found jobs more may follow soon, so it polls again after
  ``ACTIVE_POLL_INTERVAL`` and doubles the wait after each empty poll, back up to
  ``polling_interval``: a burst is picked up in milliseconds, and a few extra polls
  (four with the default 0.1 s) are all that it costs once the burst is over. An idle
  worker polls every ``polling_interval``; with the default one, on a database whose
  storage polls in one cheap round trip (``Storage.idle_polling_interval``: MySQL and
  MariaDB's), every that interval instead.
"""

from __future__ import annotations

from ..configuration import Worker, seconds

SIGNALLED_POLL_INTERVAL = 5.0
ACTIVE_POLL_INTERVAL = 0.01
DEFAULT_POLLING_INTERVAL = seconds(Worker.polling_interval)


class Fixed:
    """Every ``polling_interval``, whatever the poll found."""

    def __init__(self, polling_interval: float):
        self.polling_interval = polling_interval

    def after_poll(self, found: int) -> float:
        """Seconds to wait after a poll that claimed ``found`` jobs and left threads idle."""
        return self.polling_interval


class Signalled(Fixed):
    """Rarely: a change signal wakes the worker when there may be work."""

    def after_poll(self, found: int) -> float:
        return max(self.polling_interval, SIGNALLED_POLL_INTERVAL)


class Adaptive(Fixed):
    """Soon after activity, then less and less often, up to ``polling_interval``."""

    def __init__(self, polling_interval: float):
        super().__init__(polling_interval)
        self._wait = polling_interval

    def after_poll(self, found: int) -> float:
        if found:
            self._wait = min(ACTIVE_POLL_INTERVAL, self.polling_interval)
        else:
            self._wait = min(self._wait * 2, self.polling_interval)
        return self._wait


def choose(
    polling_interval: float,
    *,
    notified: bool,
    signalled: bool,
    idle_polling_interval: float | None = None,
) -> Fixed:
    """The pacing of a worker woken by notifications, by a change signal, or by nothing.

    ``idle_polling_interval``: the storage's own pace for a polling worker left at the
    default ``polling_interval`` (an interval the user chose is kept).
    """
    if notified:
        return Fixed(polling_interval)
    if signalled:
        return Signalled(polling_interval)
    if idle_polling_interval is not None and polling_interval == DEFAULT_POLLING_INTERVAL:
        return Adaptive(idle_polling_interval)
    return Adaptive(polling_interval)
