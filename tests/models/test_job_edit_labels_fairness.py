"""An edit or a duplicate keeps what labels and fair share say of a job: its labels
(editable, and found again by ``labelled()``) and its fairness key (computed again)."""

from __future__ import annotations

import pytest

from steady_queue.exceptions import InvalidLabels
from steady_queue.labels import labels
from steady_queue.models import Job, JobLabel, ReadyExecution
from tests.tasks import fair as fair_tasks
from tests.tasks import labelled

pytestmark = pytest.mark.django_db(transaction=True)


def test_edited_labels_replace_the_list_and_the_indexed_rows():
    with labels("tenant:7"):
        job = Job.objects.get(pk=labelled.charge.enqueue(7).id)
    assert job.labels == ["billing", "tenant:7"]

    changes = job.edit(labels=["billing", "tenant:8"])

    assert changes["labels"] == (["billing", "tenant:7"], ["billing", "tenant:8"])
    assert Job.objects.get(pk=job.pk).labels == ["billing", "tenant:8"]
    assert list(Job.objects.labelled(all=["tenant:8"])) == [job]
    assert not Job.objects.labelled(any=["tenant:7"]).exists()
    assert JobLabel.objects.filter(job_id=job.pk).count() == 2


def test_an_edit_without_labels_keeps_them_and_bad_labels_change_nothing():
    with labels("tenant:7"):
        job = Job.objects.get(pk=labelled.charge.enqueue(7).id)

    job.edit(args=[8])
    assert Job.objects.get(pk=job.pk).labels == ["billing", "tenant:7"]

    for bad in (["x" * 101], [""], [f"l{n}" for n in range(21)]):
        with pytest.raises(InvalidLabels):
            job.edit(labels=bad, args=[9])
    with pytest.raises(TypeError):
        job.edit(labels="tenant:9")
    stored = Job.objects.get(pk=job.pk)
    assert stored.labels == ["billing", "tenant:7"] and stored.arguments == job.arguments
    assert sorted(JobLabel.objects.filter(job_id=job.pk).values_list("label", flat=True)) == [
        "billing",
        "tenant:7",
    ]


def test_a_duplicate_carries_its_originals_labels_where_labelled_finds_it():
    with labels("import-42"):
        original = Job.objects.get(pk=labelled.charge.enqueue(7).id)

    copy = Job.objects.get(pk=original.duplicate(args=[9]).id)

    assert copy.labels == ["billing", "import-42"]
    assert set(Job.objects.labelled(all=["import-42"])) == {original, copy}


def test_an_edit_computes_the_fairness_key_again_and_the_ready_row_follows(fair_share):
    job = Job.objects.get(pk=fair_tasks.by_tenant.enqueue("a").id)
    assert job.fairness_key == "a"

    job.edit(args=["b"])

    assert Job.objects.get(pk=job.pk).fairness_key == "b"
    assert ReadyExecution.objects.get(job_id=job.pk).fairness_key == "b"
