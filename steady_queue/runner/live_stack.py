"""A running job's live stack, read by its worker when the dashboard asks (``StackRequest``).

A job run on a thread: that thread's frames (``sys._current_frames``), from the task
function's frame inward. Its innermost frame at a call instruction means it is in C
code (``time.sleep``, a database driver, an extension): the line that called it is
shown, and the answer says so. An ``async def`` job on a worker's event loop: its
coroutine's chain of awaits (``cr_await``), each suspended frame (``cr_frame``).

The worker asks for requests while it runs jobs that have run for ``CHECK_INTERVAL`` or
longer, once per interval (one query), and answers each into its row: no network port,
the database carries it. Jobs that end sooner cost no query: a worker busy with short
jobs polls as it did without live stacks, and a stack of such a job would be gone
before the page could show it.
"""

from __future__ import annotations

import dis
import linecache
import sys
import time
from types import FrameType
from typing import Any

from django.utils import timezone

from ..models.run_log import StackRequest
from . import run_logs

# While jobs run, how often a worker asks for stack requests (answered within 2 s);
# over a second, so that a busy worker's loop still sleeps until a thread frees up.
CHECK_INTERVAL = 1.2
# At most this many frames are shown, the innermost ones.
MAX_FRAMES = 60


def stack_of(job_id: int) -> dict[str, Any]:
    """The current stack of job ``job_id``'s run in this process (see the module)."""
    run = run_logs.running(job_id)
    if run is None:
        return {"frames": [], "in_c": False, "note": "The job is not running in this worker now."}
    if run.task is not None:
        return _coroutine_stack(run)
    frame = sys._current_frames().get(run.thread)
    if frame is None:
        return {"frames": [], "in_c": False, "note": "Its thread has ended."}
    frames = _from_task(_outward(frame), run.code)
    in_c = _in_c_call(frame)
    note = "In C code, called from the last line shown." if in_c else "Running Python code."
    return {"frames": [_described(f) for f in frames], "in_c": in_c, "note": note}


def answer_requests(job_ids: set[int]) -> int:
    """Answer the pending stack requests for these jobs (running here); how many."""
    pending = StackRequest.objects.filter(answered_at__isnull=True, job_id__in=list(job_ids))
    answered = 0
    for request in pending.only("pk", "job_id"):
        found = StackRequest.objects.filter(pk=request.pk, answered_at__isnull=True)
        answered += found.update(answer=stack_of(request.job_id), answered_at=timezone.now())
    return answered


class StackChecks:
    """When a worker's loop asks for stack requests: once per ``CHECK_INTERVAL``, about
    the jobs that have been running at least that long (see the module)."""

    def __init__(self) -> None:
        self._seen: dict[int, float] = {}  # running job id: when this loop first saw it
        self._next = 0.0

    def check(self, running_job_ids: set[int]) -> float:
        """Answer the requests if it is time; return the seconds until the next time."""
        now = time.monotonic()
        self._seen = {job_id: self._seen.get(job_id, now) for job_id in running_job_ids}
        if not self._seen:
            return CHECK_INTERVAL
        oldest = min(self._seen.values())
        due = max(self._next, oldest + CHECK_INTERVAL)
        if now < due:
            return due - now
        self._next = now + CHECK_INTERVAL
        answer_requests({j for j, since in self._seen.items() if now - since >= CHECK_INTERVAL})
        return CHECK_INTERVAL


def _outward(frame: FrameType | None) -> list[FrameType]:
    """The frames from the outermost down to ``frame``."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


def _from_task(frames: list[FrameType], code) -> list[FrameType]:
    """The frames from the task function's inward (all, if it is not among them)."""
    starts = [index for index, frame in enumerate(frames) if frame.f_code is code]
    frames = frames[starts[0] :] if starts else frames
    return frames[-MAX_FRAMES:]


def _coroutine_stack(run: run_logs.RunLog) -> dict[str, Any]:
    frames, awaited = [], run.task.get_coro()
    running = getattr(awaited, "cr_running", False)
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    waiting = type(awaited).__name__ if awaited is not None else None
    if running:
        note = "Running on the event loop (it is not awaiting: the loop waits for it)."
    elif waiting:
        note = f"Suspended, awaiting a {waiting}."
    else:
        note = "Suspended."
    frames = _from_task(frames, run.code)
    return {"frames": [_described(f) for f in frames], "in_c": False, "note": note}


def _in_c_call(frame: FrameType) -> bool:
    """Whether the innermost Python frame is in a call (so below it, C code runs)."""
    code = frame.f_code.co_code
    if not 0 <= frame.f_lasti < len(code):
        return False
    return dis.opname[code[frame.f_lasti]].startswith(("CALL", "PRECALL"))


def _described(frame: FrameType) -> dict[str, Any]:
    filename, line = frame.f_code.co_filename, frame.f_lineno or 0
    return {
        "file": filename,
        "line": line,
        "function": frame.f_code.co_name,
        "code": linecache.getline(filename, line).strip(),
    }
