"""The window arithmetic of rate limits, under any interleaving of reservations and starts.

Whatever order jobs are made ready (reserving a slot) and started (stamping one), at
whatever times, the starts a window admits never put more than ``to`` in any ``per``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from steady_queue.models.rate_limit import RateLimitBucket, Window
from steady_queue.task_options.rate_limits import RateLimit

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)

steps = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "start", "start-reserved"]),
        st.integers(min_value=0, max_value=15),  # job
        st.integers(min_value=0, max_value=700),  # milliseconds since the previous step
    ),
    max_size=120,
)


@settings(max_examples=300, deadline=None)
@given(steps=steps, to=st.integers(min_value=1, max_value=5), per_ms=st.integers(100, 2000))
def test_no_window_of_per_ever_holds_more_than_to_starts(steps, to, per_ms):
    limit = RateLimit(to=to, per=timedelta(milliseconds=per_ms))
    bucket = RateLimitBucket(key="k", task_path="t", limit_key="*", to=to, per=limit.per)
    slots, now, reserved, started = [], EPOCH, set(), []
    for action, job, elapsed in steps:
        now += timedelta(milliseconds=elapsed)
        window = Window(bucket, limit, slots, now)
        if action == "reserve" and window.take(job, reserve=True):
            reserved.add(job)
        elif action == "start" and job not in reserved and window.take(job, reserve=False):
            started.append(now)
        elif action == "start-reserved" and job in reserved:
            # A job made ready with a reservation starts: on its own slot, or on any free
            # one if another run took it meanwhile (the reservation had gone stale).
            if window.take(job, reserve=False):
                started.append(now)
            reserved.discard(job)
        slots = window.slots

    assert len(slots) <= to
    for first, later in zip(started, started[to:], strict=False):
        assert later - first >= limit.per, (first, later)


@given(to=st.integers(1, 20), per_ms=st.integers(1, 10_000))
def test_a_full_window_says_when_it_has_room(to, per_ms):
    limit = RateLimit(to=to, per=timedelta(milliseconds=per_ms))
    bucket = RateLimitBucket(key="k", task_path="t", limit_key="*", to=to, per=limit.per)
    window = Window(bucket, limit, [], EPOCH)
    assert all(window.take(job, reserve=False) for job in range(to))
    assert not window.take(to, reserve=False) and window.room() == 0

    at = window.next_free_at()

    assert at == EPOCH + limit.per + limit.margin
    assert Window(bucket, limit, window.slots, at).take(to, reserve=False)
    assert not Window(bucket, limit, window.slots, at - timedelta(microseconds=1)).room()
