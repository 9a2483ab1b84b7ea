"""The fair share in the console: a queue's busiest fairness keys (ready count, share of
runs against the share by weight, oldest waiting job, weight and whether set at runtime),
the job lists' fairness key filter, and setting and clearing a key's weight in two steps,
audited, behind the action permission, bad input a form error; bounded queries."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from steady_queue.fairness import set_weight
from steady_queue.models import FairWeight, Job
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.adapter.fair_share import SHOWN_KEYS, fair_share
from steady_queue_dashboard.models import AuditEntry
from steady_queue_dashboard.templatetags.steady_queue_dashboard import percent
from tests import tasks
from tests.tasks import fair_ops

from .page_forms import url

pytestmark = pytest.mark.usefixtures("fair_share")
WEIGHTED = "tests.tasks.fair_ops.weighted"


def token_of(html: str) -> str:
    return re.search(r'name="confirm" value="([^"]+)"', html).group(1)


@pytest.fixture
def tenants(db) -> dict[str, list[int]]:
    """Ready jobs in queue "beta_one": gold 3, silver 2, bronze 1 (enqueued in that order)."""
    ids: dict[str, list[int]] = {}
    for tenant, count in (("gold", 3), ("silver", 2), ("bronze", 1)):
        ids[tenant] = [int(fair_ops.weighted.enqueue(tenant, n).id) for n in range(count)]
    return ids


def panel_rows(html: str) -> dict[str, str]:
    html = html.replace("\xa0", " ")  # the percent filter's non-breaking space
    return dict(re.findall(r'<tr data-fairness-key="([^"]*)">(.*?)</tr>', html, re.DOTALL))


def test_the_queue_page_shows_its_busiest_keys_in_bounded_queries(
    admin_client, tenants, django_assert_max_num_queries
):
    with django_assert_max_num_queries(20):
        html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    assert "Fair share" in html
    rows = panel_rows(html)
    assert list(rows) == ["gold", "silver", "bronze"]  # the busiest first
    gold = rows["gold"]
    assert ">3<" in gold and f"#{tenants['gold'][0]}" in gold
    # Weights 4, 2, 1: gold's share by weight is 4/7.
    for key, weight in (("gold", 4), ("silver", 2), ("bronze", 1)):
        assert f">{percent(weight / 7)}<" in rows[key].replace("\xa0", " ")
    assert "set at runtime" not in html


def test_more_keys_and_jobs_take_no_more_queries(admin_client, tenants):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        admin_client.get(url("queue-detail", "beta_one"))
    for n in range(30):
        fair_ops.weighted.enqueue(f"tenant-{n}")
    with CaptureQueriesContext(connection) as many:
        html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    assert len(many) == len(few)
    assert len(panel_rows(html)) == SHOWN_KEYS
    assert "The busiest 20 are shown" in html


def test_shares_of_the_last_hours_runs(db, tenants):
    run_ready_jobs()
    for tenant in ("gold", "gold", "silver"):
        fair_ops.weighted.enqueue(tenant)
    old = Job.objects.filter(fairness_key="bronze").get()
    Job.objects.filter(pk=old.pk).update(finished_at=timezone.now() - timedelta(hours=2))

    share = fair_share("beta_one")

    rows = {row.key: row for row in share.keys}
    assert (share.runs, rows["gold"].runs, rows["silver"].runs) == (5, 3, 2)
    assert rows["gold"].run_share == pytest.approx(0.6)
    assert rows["gold"].weight_share == pytest.approx(4 / 6)  # bronze has no ready job
    assert rows["gold"].task_path == WEIGHTED


def test_jobs_without_fair_are_one_more_key(admin_client, tenants):
    tasks.noop.using(queue_name="beta_one").enqueue()
    html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    assert "(tasks without @fair)" in panel_rows(html)[""]


def test_a_queue_without_fair_jobs_shows_no_panel(admin_client, db):
    tasks.noop.enqueue()
    assert "Fair share" not in admin_client.get(url("queue-detail", "default")).content.decode()


def test_a_weight_set_at_runtime_shows_and_counts(admin_client, tenants):
    set_weight("bronze", 8, task=WEIGHTED)
    html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    bronze = panel_rows(html)["bronze"]
    assert "set at runtime" in bronze and ">8 <" in bronze.replace("8 <span", "8 <")
    assert f">{percent(8 / 14)}<" in bronze  # 8 / (4 + 2 + 8)


# The filter.


def test_the_job_lists_filter_by_fairness_key_with_the_other_filters(admin_client, tenants):
    ready = admin_client.get(url("job-list", "ready"), {"fairness_key": "silver"}).content.decode()
    assert sorted(map(int, re.findall(r'id="job-row-(\d+)"', ready))) == tenants["silver"]
    both = admin_client.get(
        url("job-list", "ready"), {"fairness_key": "silver", "queue": "default"}
    ).content.decode()
    assert not re.findall(r'id="job-row-(\d+)"', both)
    run_ready_jobs()
    finished = admin_client.get(
        url("job-list", "finished"), {"fairness_key": "gold", "task": "weighted"}
    ).content.decode()
    assert sorted(map(int, re.findall(r'id="job-row-(\d+)"', finished))) == tenants["gold"]
    assert "Fairness key" in finished


# Setting and clearing a weight.


def test_setting_a_weight_asks_first_then_sets_it_and_audits(admin_client, tenants):
    question = admin_client.post(url("fair-weight", "bronze"), {"weight": "5", "task": WEIGHTED})
    html = question.content.decode()
    assert 'fairness key <span class="mono">bronze</span> to 5?' in html
    assert "no weight is set at runtime" in html
    assert not FairWeight.objects.exists() and not AuditEntry.objects.exists()

    data = {"weight": "5", "task": WEIGHTED, "confirm": token_of(html)}
    done = admin_client.post(url("fair-weight", "bronze"), data, follow=True)

    assert "Fairness key bronze now weighs 5" in done.content.decode()
    row = FairWeight.objects.get()
    assert (row.key, row.task_path, row.weight) == ("bronze", WEIGHTED, 5)
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.target, entry.affected) == (
        "root",
        "set-fair-weight",
        "fairness key bronze",
        1,  # its one ready job moved to its new place
    )
    assert entry.details["task"] == WEIGHTED and "set to 5" in entry.message


def test_a_token_for_one_weight_does_not_set_another(admin_client, tenants):
    html = admin_client.post(url("fair-weight", "bronze"), {"weight": "5"}).content.decode()
    forged = {"weight": "500", "confirm": token_of(html)}
    again = admin_client.post(url("fair-weight", "bronze"), forged).content.decode()
    assert "did not match" in again and "to 500?" in again
    assert not FairWeight.objects.exists() and not AuditEntry.objects.exists()


def test_clearing_asks_first_then_clears_and_audits(admin_client, tenants):
    set_weight("gold", 9)
    AuditEntry.objects.all().delete()
    html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    assert url("fair-weight-clear", "gold") in html
    question = admin_client.post(url("fair-weight-clear", "gold"), {"task": ""}).content.decode()
    assert "Its weight now: 9, set at runtime." in question
    admin_client.post(url("fair-weight-clear", "gold"), {"task": "", "confirm": token_of(question)})
    assert not FairWeight.objects.exists()
    assert AuditEntry.objects.get().action == "clear-fair-weight"


@pytest.mark.parametrize(
    ("weight", "task"),
    [
        ("0", ""),
        ("-3", ""),
        ("2.5", ""),
        ("many", ""),
        ("", ""),
        ("99999999999999999999", ""),
        ("2", "tests.tasks.noop"),
        ("2", "tests.tasks.nothing"),
        ("2", "a\x00b"),
    ],
)
def test_bad_input_is_a_form_error_and_changes_nothing(admin_client, tenants, weight, task):
    response = admin_client.post(url("fair-weight", "gold"), {"weight": weight, "task": task})
    assert response.status_code == 200
    html = response.content.decode()
    assert "was not changed" in html and 'name="confirm"' not in html
    assert not FairWeight.objects.exists() and not AuditEntry.objects.exists()


def test_a_key_too_long_to_be_stored_is_refused(admin_client, tenants):
    response = admin_client.post(url("fair-weight", "k" * 300), {"weight": "2"})
    assert response.status_code == 200 and "No fairness key is longer" in response.content.decode()
    assert not FairWeight.objects.exists()


def test_htmx_asks_in_the_messages_area(admin_client, tenants):
    response = admin_client.post(
        url("fair-weight", "gold"), {"weight": "2"}, HTTP_HX_REQUEST="true"
    )
    assert response["HX-Retarget"] == "#sq-messages"
    assert 'id="sq-confirm-form"' in response.content.decode()


def test_staff_without_the_permission_cannot_set_or_clear(viewer_client, tenants):
    assert viewer_client.post(url("fair-weight", "gold"), {"weight": "2"}).status_code == 403
    set_weight("gold", 3)
    AuditEntry.objects.all().delete()
    assert viewer_client.post(url("fair-weight-clear", "gold")).status_code == 403
    assert FairWeight.objects.get().weight == 3
    assert viewer_client.get(url("fair-weight", "gold")).status_code == 405
    html = viewer_client.get(url("queue-detail", "beta_one")).content.decode()
    assert "Fair share" in html and "Set weight" not in html


# Pickup latency per key on the Tasks page.


def test_the_tasks_page_shows_each_fair_tasks_keys_pickup_latency(
    admin_client, tenants, django_assert_max_num_queries
):
    from steady_queue.models import TaskRollup
    from steady_queue.models.task_rollup import hour_of

    run_ready_jobs()
    now = timezone.now()
    for job in Job.objects.filter(fairness_key="gold"):
        attempt = {
            **job.attempts[0],
            "started_at": (job.created_at + timedelta(seconds=2)).isoformat(),
        }
        Job.objects.filter(pk=job.pk).update(attempts=[attempt])
    for task in (WEIGHTED, "tests.tasks.add"):
        TaskRollup.objects.update_or_create(
            task_path=task, queue_name="beta_one", period=hour_of(now), defaults={"runs": 3}
        )

    with django_assert_max_num_queries(10):
        html = admin_client.get(url("tasks"), {"window": "hour"}).content.decode()

    assert "Pickup latency per fairness key" in html
    rows = dict(re.findall(r'<tr data-fair-latency="([^"]+)">(.*?)</tr>', html, re.DOTALL))
    assert set(rows) == {f"{WEIGHTED} gold", f"{WEIGHTED} silver", f"{WEIGHTED} bronze"}
    assert "2.0 s" in rows[f"{WEIGHTED} gold"] or "2 s" in rows[f"{WEIGHTED} gold"]


def test_shares_are_of_the_newest_runs_when_there_are_more(admin_client, tenants, monkeypatch):
    import sys

    module = sys.modules["steady_queue_dashboard.adapter.fair_share"]  # the package's
    # fair_share attribute is the function of that name
    run_ready_jobs()
    fair_ops.weighted.enqueue("gold")
    monkeypatch.setattr(module, "RUN_SAMPLE", 4)
    share = module.fair_share("beta_one")
    assert (share.runs, share.runs_capped) == (4, True)
    html = admin_client.get(url("queue-detail", "beta_one")).content.decode()
    assert "Run shares are of the newest 4 runs of the last hour." in html
