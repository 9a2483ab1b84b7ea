"""Batches on the dashboard: the list with progress and callbacks, a batch's page, the batch
filter on the job lists, and a job's batch on its page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from steady_queue.batches import batch
from steady_queue.models import Batch, Job
from steady_queue.testing import run_ready_jobs
from tests.tasks import groups

from .test_queries import BUDGET

pytestmark = pytest.mark.django_db

# A batch's page: session, user, the batch, one page of its jobs.
BATCH_PAGE_QUERIES = 4


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def page(client, name: str, *args, query: str = "", status: int = 200) -> str:
    response = client.get(url(name, *args) + query)
    assert response.status_code == status
    return response.content.decode()


def imported(rows, *, description: str = "import", run: bool = True) -> Batch:
    """A batch importing ``rows`` (negative ones fail), with all three callbacks."""
    with batch(
        on_finish=groups.summarise,
        on_success=groups.celebrate,
        on_failure=groups.alert,
        description=description,
    ) as opened:
        for row in rows:
            groups.import_row.enqueue(row)
    if run:
        run_ready_jobs()
    return Batch.objects.get(pk=opened.pk)


def callback_jobs(opened: Batch, name: str) -> list[int]:
    return [entry["job_id"] for entry in opened.callback_jobs if entry["callback"] == name]


def row_of(html: str, pk: int) -> str:
    row = html[html.index(f'id="batch-row-{pk}"') :]
    return row[: row.index("</tr>")]


def listed(client, status: str, query: str = "") -> list[int]:
    html = page(client, "job-list", status, query=query)
    return [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]


# The list


def test_batches_are_listed_newest_first_with_progress_and_times(admin_client):
    done = imported([1, 2, -3], description="done")
    pending = imported([4, 5], description="pending", run=False)

    html = page(admin_client, "batch-list")

    assert re.findall(r'id="batch-row-(\d+)"', html) == [str(pending.pk), str(done.pk)]
    row = row_of(html, done.pk)
    assert "2 succeeded · 1 failed · 0 pending of 3" in row
    assert '<rect class="succeeded" width="133"' in row and 'width="67"' in row
    assert f'href="{url("batch-detail", done.pk)}">#{done.pk}</a>' in row
    assert row.count("<time datetime=") == 2  # created and finished
    row = row_of(html, pending.pk)
    assert "0 succeeded · 0 failed · 2 pending of 2" in row and "—" in row


def test_each_batch_shows_its_callbacks_and_links_the_jobs_they_enqueued(admin_client):
    failed = imported([1, -2], description="some failed")
    succeeded = imported([3], description="all good")

    html = page(admin_client, "batch-list")

    row = row_of(html, failed.pk)
    assert "tests.tasks.groups.summarise" in row and "tests.tasks.groups.alert" in row
    for name in ("on_finish", "on_failure"):
        (job_id,) = callback_jobs(failed, name)
        assert f'<a class="callback-job" href="/jobs/{job_id}/">#{job_id}</a>' in row
    assert 'tests.tasks.groups.celebrate</span> <span class="muted">not enqueued' in row
    row = row_of(html, succeeded.pk)
    (job_id,) = callback_jobs(succeeded, "on_success")
    assert f'href="/jobs/{job_id}/">#{job_id}</a>' in row


def test_a_batch_still_enqueueing_says_so(admin_client):
    opened = Batch.objects.create(description="in the block")
    html = page(admin_client, "batch-list")
    assert "0 succeeded · 0 failed · still enqueueing" in row_of(html, opened.pk)
    html = page(admin_client, "batch-detail", opened.pk)
    assert "enqueueing" in html


def test_batches_filter_by_part_of_their_description(admin_client):
    imported([1], description="Import November")
    kept = imported([2], description="nightly EXPORT 2026")
    html = page(admin_client, "batch-list", query="?description=export")
    assert re.findall(r'id="batch-row-(\d+)"', html) == [str(kept.pk)]
    html = page(admin_client, "batch-list", query="?description=nothing")
    assert "No batch matches this filter." in html


def test_a_bad_filter_or_cursor_gets_the_page_with_a_message(admin_client):
    imported([1])
    html = page(admin_client, "batch-list", query="?description=" + "x" * 300)
    assert "Some filters are not valid" in html
    page(admin_client, "batch-list", query="?description=a%00b")
    page(admin_client, "batch-list", query="?page_after=WyJub3BlIl0&page_before=x")


def test_the_list_costs_the_same_queries_for_many_batches(
    admin_client, django_assert_max_num_queries
):
    for n in range(30):
        imported([n, -n - 1], description=f"batch {n}")
    with django_assert_max_num_queries(BUDGET["batches"]):
        html = page(admin_client, "batch-list")
    assert html.count('id="batch-row-') == 30
    assert html.count('class="callback-job"') == 60


def test_the_list_pages_by_keyset(admin_client):
    made = [imported([], description=f"empty {n}", run=False).pk for n in range(53)]
    html = page(admin_client, "batch-list")
    cursor = re.search(r'href="/jobs/batches/\?page_after=([^"]+)"', html).group(1)
    html = page(admin_client, "batch-list", query=f"?page_after={cursor}")
    assert re.findall(r'id="batch-row-(\d+)"', html) == [str(pk) for pk in made[:3][::-1]]


# A batch's page


def test_a_batch_page_shows_its_numbers_callbacks_and_jobs(admin_client):
    opened = imported([1, 2, -3], description="import 2026-11")
    jobs = list(Job.objects.filter(batch_id=opened.pk).order_by("pk"))

    html = page(admin_client, "batch-detail", opened.pk)

    assert "import 2026-11" in html
    assert "2 succeeded · 1 failed · 0 pending of 3" in html
    assert f'<a href="/jobs/failed/?batch={opened.pk}">1</a>' in html
    (finish_job,) = callback_jobs(opened, "on_finish")
    assert f'href="/jobs/{finish_job}/">#{finish_job}</a>' in html
    rows = re.findall(r'id="job-row-(\d+)"', html)
    assert rows == [str(job.pk) for job in jobs]
    failed_row = html[html.index(f'id="job-row-{jobs[2].pk}"') :]
    assert '<span class="badge state-failed">failed</span>' in failed_row[:800]
    for status in ("ready", "failed", "finished", "waiting"):
        assert f'href="/jobs/{status}/?batch={opened.pk}"' in html


def test_a_batch_page_costs_the_same_queries_for_few_or_many_jobs(
    admin_client, django_assert_max_num_queries
):
    small, large = imported([1]), imported(range(1, 80))
    for opened in (small, large):
        with django_assert_max_num_queries(BATCH_PAGE_QUERIES):
            page(admin_client, "batch-detail", opened.pk)
    html = page(admin_client, "batch-detail", large.pk)
    assert html.count('id="job-row-') == 50 and 'rel="next"' in html


def test_a_retried_batch_says_it_finished_again(admin_client):
    groups.FAILING.add(7)
    try:
        opened = imported([7, 8])
    finally:
        groups.FAILING.clear()
    failed = Job.objects.get(batch_id=opened.pk, failed_execution__isnull=False)
    admin_client.post(url("job-retry", failed.pk))
    run_ready_jobs()

    html = page(admin_client, "batch-detail", opened.pk)

    assert "2 succeeded · 0 failed · 0 pending of 2" in html
    assert "finished 2 times" in html
    opened.refresh_from_db()
    (second_success,) = callback_jobs(opened, "on_success")
    assert (
        f'href="/jobs/{second_success}/">#{second_success}</a> <span class="muted">(finish 2)'
        in html
    )


def test_unknown_batches_answer_404(admin_client):
    page(admin_client, "batch-detail", 424242, status=404)
    assert admin_client.get("/jobs/batches/" + "9" * 30 + "/").status_code == 404
    assert admin_client.get("/jobs/batches/-1/").status_code == 404


def test_the_batch_page_answers_htmx_with_its_fragment(htmx):
    opened = imported([1])
    html = htmx.get(url("batch-detail", opened.pk)).content.decode()
    assert html.startswith('<section id="batch-detail"') and "<html" not in html


def test_descriptions_are_escaped(admin_client):
    opened = imported([1], description="<script>alert('batch')</script>")
    job = Job.objects.filter(batch_id=opened.pk).first()
    for html in (
        page(admin_client, "batch-list"),
        page(admin_client, "batch-detail", opened.pk),
        page(admin_client, "job-detail", job.pk),
    ):
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert(&#x27;batch&#x27;)&lt;/script&gt;" in html


def test_the_pages_render_without_use_tz(admin_client, settings):
    settings.USE_TZ = False
    opened = imported([1, -1])
    page(admin_client, "batch-list")
    page(admin_client, "batch-detail", opened.pk)


# The job lists and a job's page


def test_the_job_lists_filter_by_batch(admin_client, django_assert_max_num_queries):
    opened = imported([1, -2, -3])
    imported([-4, -5])
    ours = list(
        Job.objects.filter(batch_id=opened.pk, failed_execution__isnull=False).values_list(
            "pk", flat=True
        )
    )
    with django_assert_max_num_queries(BUDGET["failed"]):
        ids = listed(admin_client, "failed", f"?batch={opened.pk}")
    assert sorted(ids) == sorted(ours)
    html = page(admin_client, "job-list", "failed", query=f"?batch={opened.pk}")
    assert f'<span class="badge mono">#{opened.pk}</span>' in html  # the active filter shows
    assert f'name="batch" value="{opened.pk}"' in html  # and travels with the bulk forms


@pytest.mark.parametrize("value", ["abc", "0", "-3", "9" * 30, "1e3", "\x00"])
def test_a_bad_batch_filter_gets_the_list_with_a_message(admin_client, value):
    imported([-1])
    response = admin_client.get(url("job-list", "failed"), {"batch": value})
    assert response.status_code == 200
    assert "Some filters are not valid" in response.content.decode()


def test_a_jobs_page_links_its_batch(admin_client, django_assert_max_num_queries):
    opened = imported([1, -2], description="rows")
    job = Job.objects.filter(batch_id=opened.pk).order_by("pk").first()

    with django_assert_max_num_queries(BUDGET["job"]):
        html = page(admin_client, "job-detail", job.pk)

    assert f'<a href="{url("batch-detail", opened.pk)}">#{opened.pk} rows</a>' in html
    assert "1 succeeded, 1 failed of 2" in html


def test_a_job_whose_batch_is_gone_still_names_it(admin_client):
    opened = imported([1], run=False)
    job = Job.objects.get(batch_id=opened.pk)
    Batch.objects.filter(pk=opened.pk).delete()
    html = page(admin_client, "job-detail", job.pk)
    assert f">#{opened.pk}</a>" in html and "no longer kept" in html
    page(admin_client, "batch-detail", opened.pk, status=404)
