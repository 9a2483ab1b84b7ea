"""``Job.objects.labelled(all=..., any=...)``: jobs with every label of ``all`` and at
least one of ``any``; either may be left out; it composes with any other filter.

The property test draws jobs with random label sets and random queries, and checks
the answer against the same filter written in Python.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steady_queue import storage
from steady_queue.exceptions import CANCELLED_CLASS, InvalidLabels
from steady_queue.labels import labels
from steady_queue.models import Job, JobLabel
from tests.tasks import labelled as t

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs() -> dict[str, int]:
    """Four jobs: name -> id."""
    made = {}
    for name, names in {
        "ab": ("a", "b"),
        "a": ("a",),
        "bc": ("b", "c"),
        "none": (),
    }.items():
        with labels(*names):  # labels() of nothing opens a block that adds nothing
            made[name] = int(t.plain.enqueue(len(made)).id)
    return made


def found(queryset) -> set[int]:
    return set(queryset.values_list("pk", flat=True))


def test_all_means_every_label(jobs):
    assert found(Job.objects.labelled(all=["a"])) == {jobs["ab"], jobs["a"]}
    assert found(Job.objects.labelled(all=["a", "b"])) == {jobs["ab"]}
    assert found(Job.objects.labelled(all=["a", "c"])) == set()


def test_any_means_at_least_one_label(jobs):
    assert found(Job.objects.labelled(any=["a", "c"])) == {jobs["ab"], jobs["a"], jobs["bc"]}
    assert found(Job.objects.labelled(any=["zzz"])) == set()


def test_both_mean_both_conditions(jobs):
    assert found(Job.objects.labelled(all=["b"], any=["a", "zzz"])) == {jobs["ab"]}
    assert found(Job.objects.labelled(all=["b"], any=["c"])) == {jobs["bc"]}


def test_neither_narrows_nothing(jobs):
    assert found(Job.objects.labelled()) == set(jobs.values())
    assert found(Job.objects.labelled(all=[], any=[])) == set(jobs.values())


def test_each_job_is_found_once_whatever_the_number_of_labels_it_matches(jobs):
    assert list(Job.objects.labelled(any=["a", "b", "c"]).order_by("pk").values_list("pk")) == [
        (jobs["ab"],),
        (jobs["a"],),
        (jobs["bc"],),
    ]
    assert Job.objects.labelled(any=["a", "b"]).count() == 3


def test_it_composes_with_other_filters_before_and_after(jobs):
    Job.objects.filter(pk=jobs["a"]).update(queue_name="other")
    assert found(Job.objects.filter(queue_name="default").labelled(all=["a"])) == {jobs["ab"]}
    assert found(Job.objects.labelled(all=["a"]).filter(queue_name="other")) == {jobs["a"]}
    assert found(Job.objects.labelled(any=["a"]).labelled(any=["c"])) == set()
    assert found(Job.objects.labelled(any=["b"]).labelled(any=["c"])) == {jobs["bc"]}
    assert found(Job.objects.pending().labelled(all=["b"]).exclude(pk=jobs["bc"])) == {jobs["ab"]}


def test_it_reads_with_the_states_and_pages_in_one_query(jobs):
    with CaptureQueriesContext(connection) as captured:
        page = list(Job.objects.with_execution().labelled(all=["b"]).order_by("-pk")[:50])
    assert [job.pk for job in page] == [jobs["bc"], jobs["ab"]]
    assert [job.state for job in page] == ["ready", "ready"]
    assert len(captured) == 1


@pytest.mark.parametrize("bad", ["", None, 3, "x" * 101])
def test_a_bad_label_in_a_filter_is_refused(bad):
    with pytest.raises(InvalidLabels):
        Job.objects.labelled(all=[bad])
    with pytest.raises(InvalidLabels):
        Job.objects.labelled(any=["fine", bad])


def test_any_may_name_more_labels_than_a_job_may_carry(jobs):
    many = [f"other{i}" for i in range(30)] + ["c"]
    assert found(Job.objects.labelled(any=many)) == {jobs["bc"]}


def test_a_string_is_not_taken_for_a_list_of_letters():
    with pytest.raises(TypeError, match="list of labels"):
        Job.objects.labelled(all="ab")


# A small alphabet, so that random sets overlap: case and trailing spaces are labels of
# their own (MySQL's default collation would make them one), and non-ASCII text.
ALPHABET = ["a", "A", "a ", "b", "tenant:1", "tenant:10", "é", "x y"]
label_sets = st.lists(st.sampled_from(ALPHABET), max_size=5, unique=True)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sets=st.lists(label_sets, min_size=1, max_size=12),
    every=st.lists(st.sampled_from(ALPHABET), max_size=3),
    some=st.lists(st.sampled_from(ALPHABET), max_size=3),
)
def test_labelled_equals_the_same_filter_in_python(sets, every, some):
    JobLabel.objects.all().delete()
    Job.objects.all().delete()
    backend = t.plain.get_backend()
    built = []
    for index, names in enumerate(sets):
        with labels(*names):
            built.append(Job.for_task_call(t.plain, (index,), {}, backend=backend))
    storage.enqueue(built)  # the bulk fast path of the database under test
    expected = {
        job.pk
        for job, names in zip(built, sets, strict=True)
        if set(every) <= set(names) and (not some or set(some) & set(names))
    }
    assert found(Job.objects.labelled(all=every, any=some)) == expected
    assert Job.objects.labelled(all=every, any=some).count() == len(expected)


def test_bulk_operations_act_exactly_on_the_filtered_jobs(jobs):
    assert Job.objects.labelled(all=["a", "b"]).discard_all() == 1
    assert found(Job.objects.all()) == set(jobs.values()) - {jobs["ab"]}
    assert not JobLabel.objects.filter(job_id=jobs["ab"]).exists()
    assert Job.objects.labelled(any=["b"]).cancel_all() == 1
    cancelled = Job.objects.with_execution().get(pk=jobs["bc"])
    assert cancelled.failed_execution.exception_class == CANCELLED_CLASS
    assert Job.objects.with_execution().get(pk=jobs["a"]).state == "ready"
