"""Sleeps that a signal handler or another thread can cut short (the self-pipe trick)."""

from __future__ import annotations

import contextlib
import os
import select


class Interruptible:
    """A wake-up pipe: ``wake_up()`` ends the current or next ``interruptible_sleep()`` at once.

    Writing one byte to a pipe is safe from a signal handler and from any thread, unlike
    setting a ``threading.Event`` whose lock the interrupted main thread may hold.
    """

    _wakeup_pipe: tuple[int, int] | None = None

    def open_wakeup_pipe(self) -> None:
        reader, writer = os.pipe()
        os.set_blocking(reader, False)
        os.set_blocking(writer, False)
        self._wakeup_pipe = (reader, writer)
        self._wakeup_poll = select.poll()
        self._wakeup_poll.register(reader, select.POLLIN)

    def close_wakeup_pipe(self) -> None:
        """Close the pipe; a forked child calls this for the copy it inherited."""
        if self._wakeup_pipe is not None:
            for fd in self._wakeup_pipe:
                os.close(fd)
            self._wakeup_pipe = None

    def wake_up(self) -> None:
        """End the current or next interruptible sleep now."""
        if self._wakeup_pipe is None:
            return
        # A full pipe already holds plenty of wake-ups.
        with contextlib.suppress(BlockingIOError):
            os.write(self._wakeup_pipe[1], b".")

    def interruptible_sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True when woken up before that."""
        # poll() restarts after a signal handler ran (PEP 475); the handler's wake-up ends it.
        if not self._wakeup_poll.poll(max(seconds, 0) * 1000):
            return False
        self._drain()
        return True

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wakeup_pipe[0], 512):
                pass
