"""Labels and metadata in the console (issue 29, part 2): chips on every job list row and
page, the label filter (any/all) composing with the other filters, pagination and bulk
"all matching", metadata on the job page, and bounded queries."""

from __future__ import annotations

import json
import re
from html import unescape
from urllib.parse import urlencode

import pytest

from steady_queue.labels import labels
from steady_queue.models import Job
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from steady_queue_dashboard import joblist
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as tasks
from tests.tasks import groups, masked
from tests.tasks import labelled as labelled_tasks

from .conftest import failed_ids
from .page_forms import confirm_form, hidden_fields, url
from .test_batches import BATCH_PAGE_QUERIES
from .test_queries import BUDGET
from .test_workflows import RUN_PAGE_QUERIES

pytestmark = pytest.mark.django_db


def failed_with(*names: str, count: int = 1) -> list[int]:
    """``count`` failed jobs labelled ``names``; their ids."""
    with labels(*names):
        results = [tasks.fail.enqueue(f"{'+'.join(names)} {n}") for n in range(count)]
    run_ready_jobs()
    return [int(result.id) for result in results]


@pytest.fixture
def labelled():
    """3 failed jobs labelled a and b, 2 labelled a only, 2 labelled b only, 1 unlabelled."""
    return {
        "ab": failed_with("a", "b", count=3),
        "a": failed_with("a", count=2),
        "b": failed_with("b", count=2),
        "none": failed_with(count=1),
    }


def rows(html: str) -> set[int]:
    return {int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)}


def listed(client, status: str, params: list[tuple[str, str]]) -> str:
    response = client.get(url("job-list", status) + "?" + urlencode(params))
    assert response.status_code == 200
    return response.content.decode()


# The filter


def test_all_mode_lists_the_jobs_with_every_label(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "b"), ("label_mode", "all")])
    assert rows(html) == set(labelled["ab"])


def test_any_mode_lists_the_jobs_with_one_of_them(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "b"), ("label_mode", "any")])
    assert rows(html) == {*labelled["ab"], *labelled["a"], *labelled["b"]}


def test_an_empty_or_missing_mode_means_all(admin_client, labelled):
    for params in (
        [("label", "a"), ("label", "b"), ("label_mode", "")],
        [("label", "a"), ("label", "b")],
    ):
        assert rows(listed(admin_client, "failed", params)) == set(labelled["ab"])


def test_one_label_lists_its_jobs(admin_client, labelled):
    assert rows(listed(admin_client, "failed", [("label", "a")])) == {
        *labelled["ab"],
        *labelled["a"],
    }


def test_blank_labels_filter_nothing_and_are_not_an_active_filter(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", ""), ("label", "  "), ("label_mode", "any")])
    assert len(rows(html)) == 8
    assert '<summary class="btn">Filters</summary>' in html  # no active filter counted
    assert "Some filters are not valid" not in html


def test_the_label_filter_composes_with_the_other_filters(admin_client, labelled):
    with labels("a", "b"):
        other = tasks.fail.using(queue_name="low").enqueue("elsewhere")
    run_ready_jobs()
    params = [("label", "a"), ("label", "b"), ("queue", "low")]
    assert rows(listed(admin_client, "failed", params)) == {int(other.id)}
    params = [("label", "b"), ("label_mode", "any"), ("args", "a+b 0")]
    assert rows(listed(admin_client, "failed", params)) == {labelled["ab"][0]}


def test_pages_keep_the_label_filter(admin_client, labelled, monkeypatch):
    monkeypatch.setattr(joblist, "PAGE_SIZE", 2)
    seen: set[int] = set()
    page = url("job-list", "failed") + "?label=a&label=b&label_mode=all"
    while page:
        html = admin_client.get(page).content.decode()
        assert "Some filters are not valid" not in html
        seen |= rows(html)
        found = re.search(r'href="([^"]+)" hx-get="[^"]+" hx-push-url="true" rel="next"', html)
        page = unescape(found.group(1)) if found else None
        if page:
            assert "label=a" in page and "label=b" in page
    assert seen == set(labelled["ab"])


def test_the_form_shows_the_chosen_labels_ticked_and_a_box_for_one_more(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "b"), ("label_mode", "any")])
    assert '<input type="checkbox" name="label" value="a" checked>' in html
    assert '<input type="checkbox" name="label" value="b" checked>' in html
    assert re.search(r'<input type="text" name="label" value=""[^>]*id="id_label"', html)
    assert re.search(r'<option value="any" selected>', html)
    # The bulk form carries the labels and the mode, one hidden input each.
    carried = hidden_fields(html, "bulk-form")
    assert carried["label"] == ["a", "b"] and carried["label_mode"] == ["any"]


def test_the_empty_list_says_which_labels_matched_nothing(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "zzz")])
    assert not rows(html)
    assert "Labels=all of &quot;a&quot;, &quot;zzz&quot;" in html


# Bulk "all matching" acts exactly on what the filter shows


def test_retry_all_matching_retries_exactly_the_jobs_with_both_labels(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "b"), ("label_mode", "all")])
    data = hidden_fields(html, "bulk-form") | {"scope": ["all"]}
    asked = admin_client.post(url("jobs-retry", "failed"), data).content.decode()
    assert "Retry 3 jobs" in asked
    assert "Labels=all of &quot;a&quot;, &quot;b&quot;" in asked
    admin_client.post(url("jobs-retry", "failed"), confirm_form(asked))
    assert failed_ids() == {*labelled["a"], *labelled["b"], *labelled["none"]}
    retried = Job.objects.filter(pk__in=labelled["ab"])
    assert all(job.state == "ready" for job in retried.with_execution())
    entry = AuditEntry.objects.get(action="retry all")
    assert 'Labels=all of "a", "b"' in entry.target
    assert ["label", "a"] in entry.details["filters"] and ["label", "b"] in entry.details["filters"]


def test_discard_all_matching_with_any_acts_on_the_union(admin_client, labelled):
    html = listed(admin_client, "failed", [("label", "a"), ("label", "b"), ("label_mode", "any")])
    data = hidden_fields(html, "bulk-form") | {"scope": ["all"]}
    asked = admin_client.post(url("jobs-discard", "failed"), data).content.decode()
    assert "Discard 7 jobs" in asked
    admin_client.post(url("jobs-discard", "failed"), confirm_form(asked))
    assert failed_ids() == set(labelled["none"])


def test_a_confirmation_cannot_be_widened_by_changing_the_labels(admin_client, labelled):
    data = {"label": ["a", "b"], "label_mode": ["all"], "scope": ["all"]}
    asked = admin_client.post(url("jobs-discard", "failed"), data).content.decode()
    forged = confirm_form(asked) | {"label_mode": ["any"]}
    admin_client.post(url("jobs-discard", "failed"), forged)
    assert len(failed_ids()) == 8  # the signed question named "all": nothing was discarded


def test_invalid_labels_refuse_all_matching_rather_than_widen(admin_client, labelled):
    data = {"label": [f"l{n}" for n in range(999)], "scope": ["all"]}
    response = admin_client.post(url("jobs-discard", "failed"), data, HTTP_HX_REQUEST="true")
    assert "Some filters are not valid, so nothing was done" in response.content.decode()
    assert len(failed_ids()) == 8
    # Past Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (1,000) the request is refused before
    # the dashboard sees it: 400, nothing done.
    admin_client.raise_request_exception = False
    data["label"].append("one too many")
    assert admin_client.post(url("jobs-discard", "failed"), data).status_code == 400
    assert len(failed_ids()) == 8


# Bad input never answers 500


@pytest.mark.parametrize(
    "params",
    [
        [("label", f"l{n}") for n in range(1000)],
        [("label", "x" * 101)],
        [("label", "a\x00b")],
        [("label", "a"), ("label_mode", "both")],
        [("label", "a"), ("label_mode", "\x00")],
    ],
    ids=["1000 labels", "too long", "NUL", "unknown mode", "NUL mode"],
)
def test_invalid_label_filters_are_refused_with_a_message(admin_client, labelled, params):
    html = listed(admin_client, "failed", params)
    assert "Some filters are not valid" in html


@pytest.mark.parametrize(
    "label",
    ["tenant:7", "a&b c", "ü/ß#?%", "<script>x</script>", "a,b", '"q"', "+1", "x" * 100],
)
def test_odd_labels_filter_and_link_back_to_themselves(admin_client, label):
    (pk,) = failed_with(label)
    failed_with("other")
    html = listed(admin_client, "failed", [("label", label)])
    assert rows(html) == {pk}
    assert "<script>x" not in html
    # The row's chip links to the list filtered by exactly that label.
    chip = re.search(r'<a class="label-chip" href="([^"]+)"', html).group(1)
    assert rows(admin_client.get(unescape(chip)).content.decode()) == {pk}


# Chips


def test_rows_show_their_labels_as_chips_that_filter_the_list(admin_client, labelled):
    html = listed(admin_client, "failed", [])
    row = re.search(rf'id="job-row-{labelled["ab"][0]}".*?</tr>', html, re.DOTALL).group(0)
    assert f'href="{url("job-list", "failed")}?label=a"' in row
    assert f'href="{url("job-list", "failed")}?label=b"' in row


def test_every_list_shows_labels(admin_client):
    with labels("on-every-list"):
        tasks.record.enqueue(1)
    html = listed(admin_client, "ready", [])
    assert f'href="{url("job-list", "ready")}?label=on-every-list"' in html
    run_ready_jobs()
    html = listed(admin_client, "finished", [("label", "on-every-list")])
    assert len(rows(html)) == 1


def test_the_job_page_shows_its_labels(admin_client, labelled):
    html = admin_client.get(url("job-detail", labelled["ab"][0])).content.decode()
    assert "<dt>Labels</dt>" in html
    assert f'href="{url("job-list", "failed")}?label=a"' in html


def test_a_job_without_labels_shows_no_labels_row(admin_client, labelled):
    html = admin_client.get(url("job-detail", labelled["none"][0])).content.decode()
    assert "<dt>Labels</dt>" not in html and "label-chip" not in html


# Metadata


def test_the_job_page_shows_metadata_as_indented_json_masked(admin_client, monkeypatch):
    result = tasks.record.enqueue(1)
    job = Job.objects.get(pk=result.id)
    Job.objects.filter(pk=job.pk).update(
        metadata={
            "rows_done": 1200,
            "source": "s3://x",
            "api_key": "K-SECRET",
            "nested": {"token": "T"},
        }
    )
    html = admin_client.get(url("job-detail", job.pk)).content.decode()
    shown = re.search(r'<pre class="code metadata">(.*?)</pre>', html, re.DOTALL).group(1)
    assert json.loads(unescape(shown)) == {
        "api_key": "[masked]",
        "nested": {"token": "[masked]"},
        "rows_done": 1200,
        "source": "s3://x",
    }
    assert "K-SECRET" not in html


def test_the_job_page_shows_what_the_task_stored_with_set_metadata(admin_client):
    result = labelled_tasks.with_metadata.enqueue(1200, "s3://bucket/rows.csv")
    run_ready_jobs()
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    shown = re.search(r'<pre class="code metadata">(.*?)</pre>', html, re.DOTALL).group(1)
    assert json.loads(unescape(shown)) == {"rows_done": 1200, "source": "s3://bucket/rows.csv"}


def test_metadata_hides_the_tasks_own_masked_parameters(admin_client):
    result = masked.charge.enqueue("4111-1111", 10)
    Job.objects.filter(pk=result.id).update(metadata={"card_number": "4111-1111", "amount": 10})
    html = admin_client.get(url("job-detail", result.id)).content.decode()
    assert "4111-1111" not in html
    assert "&quot;card_number&quot;: &quot;[masked]&quot;" in html


def test_a_job_without_metadata_shows_no_metadata_section(admin_client, labelled):
    html = admin_client.get(url("job-detail", labelled["none"][0])).content.decode()
    assert 'id="metadata"' not in html


def test_metadata_set_by_a_running_task_shows_on_the_live_page(admin_client):
    result = tasks.crawl.enqueue(steps=1, pause=0)
    job = Job.objects.get(pk=result.id)
    before = admin_client.get(url("job-detail", job.pk), HTTP_HX_REQUEST="true").content.decode()
    assert 'id="metadata"' not in before and "every 3s" in before  # the page refreshes itself
    Job.objects.filter(pk=job.pk).update(metadata={"rows_done": 5})
    after = admin_client.get(url("job-detail", job.pk), HTTP_HX_REQUEST="true").content.decode()
    assert "&quot;rows_done&quot;: 5" in after


# Batch and workflow pages


def test_a_batch_page_shows_its_jobs_labels_linked_within_the_batch(admin_client):
    from steady_queue.batches import batch

    with batch(description="labelled") as opened, labels("tenant:7"):
        tasks.fail.enqueue("x")
    run_ready_jobs()
    html = admin_client.get(url("batch-detail", opened.pk)).content.decode()
    chip = f"{url('job-list', 'failed')}?batch={opened.pk}&amp;label=tenant%3A7"
    assert f'href="{chip}"' in html


def test_a_workflow_page_shows_its_steps_labels(admin_client):
    wf = Workflow("labelled run")
    with labels("wf-label"):
        wf.add(groups.step, args=(1,), name="only")
        run = wf.enqueue()
    html = admin_client.get(url("workflow-detail", run.id)).content.decode()
    assert ">wf-label</a>" in html
    assert f"?workflow={run.id}&amp;label=wf-label" in html


# Query counts


def many_labelled(count: int = 12) -> None:
    for n in range(count):
        with labels("a", f"n{n}"):
            tasks.fail.enqueue(f"e{n}")
            tasks.record.enqueue(n)
    run_ready_jobs()


@pytest.mark.parametrize("status", ["failed", "finished"])
def test_the_label_filter_costs_at_most_one_more_query(
    admin_client, status, django_assert_max_num_queries
):
    many_labelled()
    for mode in ("all", "any"):
        with django_assert_max_num_queries(BUDGET[status] + 1):
            html = listed(
                admin_client, status, [("label", "a"), ("label", "n3"), ("label_mode", mode)]
            )
        assert len(rows(html)) == (1 if mode == "all" else 12)


def test_the_labelled_confirmation_is_bounded(admin_client, django_assert_max_num_queries):
    many_labelled()
    with django_assert_max_num_queries(6 + 1):
        asked = admin_client.post(
            url("jobs-retry", "failed"), {"scope": "all", "label": ["a", "n3"]}
        ).content.decode()
    assert "Retry 1 job" in asked


def test_the_job_batch_and_workflow_pages_cost_no_more_with_labels(
    admin_client, django_assert_max_num_queries
):
    from steady_queue.batches import batch

    with batch(description="labelled") as opened, labels("a", "b", "c"):
        for n in range(30):
            tasks.fail.enqueue(f"e{n}")
    run_ready_jobs()
    wf = Workflow("labelled")
    with labels("a", "b"):
        for n in range(20):
            wf.add(groups.step, args=(n,), name=f"s{n}")
        run = wf.enqueue()
    job = Job.objects.filter(batch_id=opened.pk).first()
    Job.objects.filter(pk=job.pk).update(metadata={"rows": list(range(50))})
    with django_assert_max_num_queries(BUDGET["job"]):
        assert admin_client.get(url("job-detail", job.pk)).status_code == 200
    with django_assert_max_num_queries(BATCH_PAGE_QUERIES):
        html = admin_client.get(url("batch-detail", opened.pk)).content.decode()
    assert html.count('class="label-chip"') == 90
    with django_assert_max_num_queries(RUN_PAGE_QUERIES):
        html = admin_client.get(url("workflow-detail", run.id)).content.decode()
    assert html.count('class="label-chip"') == 40
