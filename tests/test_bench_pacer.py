"""bench/pacer.py: the open-loop schedule and the percentiles of the latency tables,
and bench/sink.py, the file every benchmark job of bench/compare_brokers.py writes to."""

from __future__ import annotations

import math
import multiprocessing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench import pacer, sink


class FakeClock:
    """A clock that moves only when slept on, or when a send takes time."""

    def __init__(self, send_takes: float = 0.0) -> None:
        self.now = 1000.0
        self.send_takes = send_takes
        self.sent: list[tuple[float, float]] = []  # (due, when sent)

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds

    def send(self, due: float) -> None:
        self.sent.append((due, self.now))
        self.now += self.send_takes


def test_jobs_are_due_at_a_fixed_rate_and_sent_when_due():
    clock = FakeClock()
    worst = pacer.pace(200, 5, clock.send, clock=lambda: clock.now, sleep=clock.sleep)
    assert [due - 1000.0 for due, _ in clock.sent] == pytest.approx([0, 0.005, 0.01, 0.015, 0.02])
    assert all(sent == pytest.approx(due) for due, sent in clock.sent)
    assert worst == pytest.approx(0)


def test_a_slow_send_does_not_move_the_schedule():
    """Open loop: each send takes 2.5 periods, the due times stay on the grid, and how late
    the pacer fell is reported (it is part of the jobs' latency, as their due time is)."""
    clock = FakeClock(send_takes=0.025)
    worst = pacer.pace(100, 4, clock.send, clock=lambda: clock.now, sleep=clock.sleep)
    assert [due - 1000.0 for due, _ in clock.sent] == pytest.approx([0, 0.01, 0.02, 0.03])
    assert [sent - 1000.0 for _, sent in clock.sent] == pytest.approx([0, 0.025, 0.05, 0.075])
    assert worst == pytest.approx(0.045)


@pytest.mark.parametrize("rate, count", [(0, 1), (-5, 1), (10, -1)])
def test_a_rate_that_is_not_positive_or_a_negative_count_is_refused(rate, count):
    with pytest.raises(ValueError, match="positive rate"):
        pacer.pace(rate, count, lambda due: None)


def test_percentiles_by_nearest_rank():
    samples = [float(v) for v in range(1, 101)]  # 1..100
    assert pacer.percentile(samples, 50) == 50
    assert pacer.percentile(samples, 99) == 99
    assert pacer.percentile(samples, 100) == 100
    assert pacer.percentile(samples, 0) == 1
    assert pacer.percentile([3.0, 1.0, 2.0], 50) == 2


@given(
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=200),
    st.floats(min_value=0, max_value=100),
)
def test_a_percentile_is_a_sample_with_p_percent_at_or_below_it(samples, p):
    value = pacer.percentile(samples, p)
    assert value in samples
    at_or_below = sum(1 for s in samples if s <= value)
    below = sum(1 for s in samples if s < value)
    assert at_or_below >= math.ceil(len(samples) * p / 100)
    assert below < max(1, math.ceil(len(samples) * p / 100))


@pytest.mark.parametrize("p", [-1, 100.5])
def test_a_percentile_outside_0_to_100_or_of_nothing_is_refused(p):
    with pytest.raises(ValueError, match="between 0 and 100"):
        pacer.percentile([1.0], p)
    with pytest.raises(ValueError, match="no samples"):
        pacer.percentile([], 50)


def _write(path: str, start: int) -> None:
    import os

    os.environ[sink.VARIABLE] = path
    for number in range(start, start + 500):
        sink.record("tick", number)


def test_the_sink_keeps_every_line_of_several_processes_whole(tmp_path):
    path = str(tmp_path / "sink")
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_write, args=(path, i * 500)) for i in range(3)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=60)
        assert writer.exitcode == 0
    lines = sink.lines(path)
    assert sink.count(path) == len(lines) == 1500
    assert sorted(int(fields[1]) for fields in lines) == list(range(1500))
    assert all(fields[0] == "tick" and float(fields[2]) > 0 for fields in lines)


def test_producers_share_one_schedule_each_sending_its_own_jobs():
    """Three producer processes at 300 jobs/s: together, exactly the one producer's due
    times, each job once."""
    single = FakeClock()
    pacer.pace(300, 10, single.send, clock=lambda: single.now, sleep=single.sleep, start=1000.0)
    shared = []
    for producer in range(3):
        clock = FakeClock()
        pacer.pace(
            300,
            10,
            clock.send,
            clock=lambda clock=clock: clock.now,
            sleep=clock.sleep,
            start=1000.0,
            producers=3,
            producer=producer,
        )
        shared += [due for due, _ in clock.sent]
    assert sorted(shared) == pytest.approx([due for due, _ in single.sent])


def test_a_producer_index_outside_the_producers_is_refused():
    with pytest.raises(ValueError, match="producer must be"):
        pacer.pace(10, 5, lambda due: None, producers=2, producer=2)
