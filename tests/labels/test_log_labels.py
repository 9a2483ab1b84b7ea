"""``steady_queue.log_label_prefixes``: the job log records carry the labels chosen by
prefix, and none by default."""

from __future__ import annotations

import logging

import pytest

import steady_queue
from steady_queue.labels import labels
from steady_queue.models import Job
from steady_queue.observability.log import job_fields
from steady_queue.testing import run_ready_jobs
from tests.tasks import labelled as t

pytestmark = pytest.mark.django_db


def job_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "steady_queue.jobs"]


def test_by_default_no_record_carries_labels(caplog):
    assert steady_queue.log_label_prefixes == []
    with labels("tenant:7"):
        result = t.charge.enqueue(7)
    with caplog.at_level(logging.INFO, logger="steady_queue.jobs"):
        run_ready_jobs()
    records = job_records(caplog)
    assert [r.getMessage().split()[0] for r in records] == ["Started", "Finished"]
    assert not any(hasattr(r, "labels") for r in records)
    assert "labels" not in job_fields(Job.objects.get(pk=result.id))


def test_the_chosen_prefixes_put_matching_labels_on_the_start_and_end_records(caplog, monkeypatch):
    monkeypatch.setattr(steady_queue, "log_label_prefixes", ["tenant:", "import-"])
    with labels("tenant:7", "import-42", "customer:9"):
        result = t.charge.enqueue(7)
    with caplog.at_level(logging.INFO, logger="steady_queue.jobs"):
        run_ready_jobs()
    records = job_records(caplog)
    assert len(records) == 2
    assert [r.labels for r in records] == [["tenant:7", "import-42"]] * 2
    assert [r.job_id for r in records] == [result.id] * 2
    fields = job_fields(Job.objects.get(pk=result.id))
    assert fields["labels"] == ["tenant:7", "import-42"]


def test_a_job_without_matching_labels_logs_an_empty_list(caplog, monkeypatch):
    monkeypatch.setattr(steady_queue, "log_label_prefixes", ["tenant:"])
    t.charge.enqueue(1)  # only "billing"
    with caplog.at_level(logging.INFO, logger="steady_queue.jobs"):
        run_ready_jobs()
    assert [r.labels for r in job_records(caplog)] == [[], []]


def test_metrics_carry_no_job_labels_even_with_prefixes_set(monkeypatch):
    from steady_queue.metrics.collector import QueueCollector

    monkeypatch.setattr(steady_queue, "log_label_prefixes", ["tenant:"])
    with labels("tenant:7"):
        t.charge.enqueue(7)
    run_ready_jobs()
    with labels("tenant:8"):
        t.charge.enqueue(8)
    samples = [sample for metric in QueueCollector().collect() for sample in metric.samples]
    assert samples  # the collector did report
    values = {value for sample in samples for value in sample.labels.values()}
    assert not {"tenant:7", "tenant:8", "billing"} & values
