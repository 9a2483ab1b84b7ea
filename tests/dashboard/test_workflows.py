"""Workflows on the dashboard: the runs list, a run's graph and steps, the Waiting list, and
a step's place on its job's page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from steady_queue.models import Job, WaitingExecution, WorkflowRun
from steady_queue.testing import run_ready_jobs
from steady_queue.workflows import Workflow
from steady_queue_dashboard import workflow_graph
from tests.tasks import groups

from .page_forms import confirm_form
from .test_queries import BUDGET

pytestmark = pytest.mark.django_db

# The run page: session, user, the run, its steps, their jobs, their edges.
RUN_PAGE_QUERIES = 6


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def page(client, name: str, *args, query: str = "", status: int = 200) -> str:
    response = client.get(url(name, *args) + query)
    assert response.status_code == status
    return response.content.decode()


def failing_run(name: str = "nightly report"):
    """extract fails: transform, load and join never run; audit runs anyway."""
    wf = Workflow(name)
    extract = wf.add(groups.explode, args=(1,), name="extract")
    transform = wf.add(groups.step, args=(2,), after=[extract], name="transform")
    load = wf.add(groups.step, args=(3,), after=[transform], name="load")
    wf.add(groups.step, args=(4,), after=[extract], name="audit", run_if="finished")
    side = wf.add(groups.step, args=(5,), name="side")
    wf.add(groups.step, args=(6,), after=[side, load], name="join")
    enqueued = wf.enqueue()
    run_ready_jobs()
    return enqueued


def waiting_run(name: str = "waits"):
    """Nothing has run: first is ready, second and third wait."""
    wf = Workflow(name)
    first = wf.add(groups.step, args=(1,), name="first")
    second = wf.add(groups.step, args=(2,), after=[first], name="second")
    wf.add(groups.step, args=(3,), after=[second], name="third")
    return wf.enqueue()


def fan_out(width: int):
    wf = Workflow(f"fan-out {width}")
    root = wf.add(groups.step, name="root")
    leaves = [wf.add(groups.step, args=(n,), after=[root], name=f"leaf-{n}") for n in range(width)]
    wf.add(groups.step, after=leaves, name="gather")
    return wf.enqueue()


def node_class(html: str, job_id) -> str:
    match = re.search(rf'<a class="node ([^"]+)" href="/jobs/{job_id}/"', html)
    assert match, f"no node links to job {job_id}"
    return match.group(1)


def job_ids(run, *names: str) -> list[int]:
    return [int(run[name].id) for name in names]


def listed(client, status: str, query: str = "") -> list[int]:
    html = page(client, "job-list", status, query=query)
    return [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]


# The runs list


def test_runs_are_listed_newest_first_with_their_progress(admin_client):
    failed = failing_run("older")
    waiting = waiting_run("newer")

    html = page(admin_client, "workflow-list")

    rows = re.findall(r'id="workflow-row-(\d+)"', html)
    assert rows == [str(waiting.id), str(failed.id)]
    older = html[html.index(f'id="workflow-row-{failed.id}"') :]
    assert "2 succeeded · 4 failed · 0 pending of 6" in older
    assert f'href="{url("workflow-detail", failed.id)}"' in older
    newer = html[html.index(f'id="workflow-row-{waiting.id}"') :]
    assert "0 succeeded · 0 failed · 3 pending of 3" in newer


def test_runs_filter_by_part_of_their_name(admin_client):
    failing_run("nightly report")
    kept = waiting_run("hourly sync")
    html = page(admin_client, "workflow-list", query="?name=HOURLY")
    assert re.findall(r'id="workflow-row-(\d+)"', html) == [str(kept.id)]
    html = page(admin_client, "workflow-list", query="?name=nothing-like-it")
    assert "No workflow run matches this filter." in html


def test_a_bad_filter_or_cursor_gets_the_page_with_a_message(admin_client):
    waiting_run()
    html = page(admin_client, "workflow-list", query="?name=" + "x" * 300)
    assert "Some filters are not valid" in html
    page(admin_client, "workflow-list", query="?name=a%00b")
    page(admin_client, "workflow-list", query="?page_after=bm90LWEtY3Vyc29y")


def test_the_runs_list_costs_the_same_queries_for_many_runs(
    admin_client, django_assert_max_num_queries
):
    for n in range(30):
        waiting_run(f"run {n}")
    with django_assert_max_num_queries(BUDGET["workflows"]):
        html = page(admin_client, "workflow-list")
    assert html.count('id="workflow-row-') == 30


def test_the_runs_list_pages_by_keyset(admin_client):
    runs = [waiting_run(f"run {n}").id for n in range(55)]
    html = page(admin_client, "workflow-list")
    assert html.count('id="workflow-row-') == 50
    cursor = re.search(r'href="/jobs/workflows/\?page_after=([^"]+)"', html).group(1)
    html = page(admin_client, "workflow-list", query=f"?page_after={cursor}")
    assert re.findall(r'id="workflow-row-(\d+)"', html) == [str(pk) for pk in runs[:5][::-1]]


# A run's page


def test_the_graph_colours_each_step_by_state_and_links_its_job(admin_client):
    run = failing_run()

    html = page(admin_client, "workflow-detail", run.id)

    assert node_class(html, run["extract"].id) == "state-failed"
    for blocked in ("transform", "load", "join"):
        assert node_class(html, run[blocked].id) == "state-dependency-failed"
    assert node_class(html, run["audit"].id) == "state-succeeded"
    assert node_class(html, run["side"].id) == "state-succeeded"
    assert '<pattern id="sq-hatch"' in html  # steps that never ran are hatched
    assert html.count('<path class="edge') == 5
    assert html.count('<path class="edge blocking"') == 3  # extract→transform→load→join
    assert '✗ failed <span class="count">(1)</span>' in html  # the legend counts them


def test_the_failed_step_and_the_steps_it_blocked_are_spelled_out(admin_client):
    run = failing_run()

    html = page(admin_client, "workflow-detail", run.id)

    summary = html[html.index('class="workflow-failures') :]
    summary = summary[: summary.index("</div>")]
    assert "failed:</strong>" in summary and "exploded 1" in summary
    assert f'<a class="mono" href="/jobs/{run["extract"].id}/">extract</a>' in summary
    blocked = summary[summary.index("blocked:</strong>") :]
    names = re.findall(r'<a class="mono" href="/jobs/\d+/">([^<]+)</a>', blocked)
    assert names == ["transform", "load", "join"]


def test_the_steps_table_lists_every_step_with_its_state_upstream_and_error(admin_client):
    run = failing_run()

    html = page(admin_client, "workflow-detail", run.id)

    table = html[html.index('class="table workflow-steps"') :]
    assert re.findall(r'<tr id="step-(\d+)"', table) == [
        str(run[name].id) for name in ("extract", "transform", "load", "audit", "side", "join")
    ]
    join = table[table.index(f'id="step-{run["join"].id}"') :]
    join = join[: join.index("</tr>")]
    assert "not run: an upstream step failed" in join
    assert '<span class="mono">load</span>, <span class="mono">side</span>' in join
    assert "step &#x27;load&#x27; failed" in join
    audit = table[table.index(f'id="step-{run["audit"].id}"') :]
    assert "(even if they fail)" in audit[: audit.index("</tr>")]


def test_waiting_and_ready_steps_show_so_and_the_run_refreshes(admin_client):
    run = waiting_run()

    html = page(admin_client, "workflow-detail", run.id)

    assert node_class(html, run["first"].id) == "state-ready"
    assert node_class(html, run["second"].id) == "state-waiting"
    assert node_class(html, run["third"].id) == "state-waiting"
    assert "every 5s" in html  # unfinished: it refreshes itself
    assert "workflow-failures" not in html


def test_a_discarded_step_shows_as_gone_and_what_it_blocked(admin_client):
    run = waiting_run()
    Job.objects.get(pk=run["first"].id).discard()

    html = page(admin_client, "workflow-detail", run.id)

    assert node_class(html, run["first"].id) == "state-discarded"
    assert node_class(html, run["second"].id) == "state-dependency-failed"
    assert "discarded:</strong>" in html


def test_steps_are_placed_in_columns_by_their_longest_path_from_a_root(admin_client):
    run = failing_run()
    html = page(admin_client, "workflow-detail", run.id)

    def x_of(name: str) -> int:
        node = re.search(rf'<a class="node [^"]+" href="/jobs/{run[name].id}/"', html)
        return int(re.search(r'<rect x="(\d+)"', html[node.start() :]).group(1))

    assert x_of("extract") == x_of("side") < x_of("transform") == x_of("audit")
    assert x_of("transform") < x_of("load") < x_of("join")  # join waits for side and load


def test_retrying_the_failed_step_from_the_dashboard_resumes_the_workflow(admin_client):
    run = failing_run()
    groups.FAILING.clear()
    admin_client.post(url("job-retry", run["extract"].id))

    html = page(admin_client, "workflow-detail", run.id)
    assert node_class(html, run["extract"].id) == "state-ready"
    assert node_class(html, run["transform"].id) == "state-waiting"
    assert "workflow-failures" not in html


def test_a_wide_fan_out_renders_with_its_columns_collapsed(
    admin_client, django_assert_max_num_queries
):
    run = fan_out(1000)

    with django_assert_max_num_queries(RUN_PAGE_QUERIES):
        html = page(admin_client, "workflow-detail", run.id)

    nodes = re.findall(r'<a class="node ', html)
    assert len(nodes) == 1 + (workflow_graph.MAX_ROWS - 1) + 1
    assert f"+{1000 - workflow_graph.MAX_ROWS + 1} more steps" in html
    assert "981 steps are drawn inside" in html
    assert html.count('<tr id="step-') == 1002  # the table still lists every step
    assert len(html) < 1_500_000


def test_a_run_page_costs_the_same_queries_for_few_or_many_steps(
    admin_client, django_assert_max_num_queries
):
    small, large = fan_out(2), fan_out(150)
    for run in (small, large):
        with django_assert_max_num_queries(RUN_PAGE_QUERIES):
            page(admin_client, "workflow-detail", run.id)


def test_a_run_beyond_the_step_cap_says_it_shows_the_first_steps(admin_client, monkeypatch):
    from steady_queue_dashboard.adapter import workflows

    monkeypatch.setattr(workflows, "STEP_CAP", 10)
    run = fan_out(20)
    html = page(admin_client, "workflow-detail", run.id)
    assert "Showing the first 10 of 22 steps." in html
    assert html.count('<tr id="step-') == 10


def test_a_long_chain_draws_a_bounded_number_of_columns(admin_client, monkeypatch):
    monkeypatch.setattr(workflow_graph, "MAX_COLUMNS", 5)
    wf = Workflow("chain")
    previous = wf.add(groups.step, name="s0")
    for n in range(1, 8):
        previous = wf.add(groups.step, args=(n,), after=[previous], name=f"s{n}")
    run = wf.enqueue()
    html = page(admin_client, "workflow-detail", run.id)
    assert len(re.findall(r'<a class="node ', html)) == 5
    assert "3 steps deeper than the graph's last column are only in the table." in html


def test_unknown_runs_answer_404(admin_client):
    page(admin_client, "workflow-detail", 999_999, status=404)
    assert admin_client.get("/jobs/workflows/" + "9" * 40 + "/").status_code == 404
    assert admin_client.get("/jobs/workflows/abc/").status_code == 404


def test_names_are_escaped_everywhere(admin_client):
    wf = Workflow("<script>alert('run')</script>")
    first = wf.add(groups.step, name="<img src=x onerror=alert(1)>")
    wf.add(groups.step, after=[first], name='"><script>alert(2)</script>')
    run = wf.enqueue()

    for html in (
        page(admin_client, "workflow-list"),
        page(admin_client, "workflow-detail", run.id),
        page(admin_client, "job-list", "waiting"),
        page(admin_client, "job-detail", run[first].id),
    ):
        assert "<script>alert" not in html and "<img src=x" not in html
    html = page(admin_client, "workflow-detail", run.id)
    assert "&lt;script&gt;alert(&#x27;run&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_run_page_answers_htmx_with_its_fragment(htmx):
    run = failing_run()
    html = htmx.get(url("workflow-detail", run.id)).content.decode()
    assert html.startswith('<section id="workflow-detail"') and "<html" not in html


def test_the_run_page_renders_without_use_tz(admin_client, settings):
    settings.USE_TZ = False
    run = waiting_run()
    page(admin_client, "workflow-detail", run.id)
    page(admin_client, "workflow-list")


# The Waiting list


def test_waiting_steps_have_their_own_list_with_run_step_and_count(admin_client):
    run = waiting_run("the <run>")

    html = page(admin_client, "job-list", "waiting")

    ids = [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]
    assert ids == job_ids(run, "second", "third")
    row = html[html.index(f'id="job-row-{run["second"].id}"') :]
    row = row[: row.index("</tr>")]
    assert f'href="{url("workflow-detail", run.id)}">the &lt;run&gt; #{run.id}</a>' in row
    assert '<td class="mono" data-label="Step">second</td>' in row and "1 step</td>" in row
    tab = re.search(r'href="/jobs/waiting/"[^>]*>Waiting <span class="count">(\d+)</span>', html)
    assert tab.group(1) == "2"


def test_the_waiting_list_filters_by_workflow_and_costs_a_bounded_number_of_queries(
    admin_client, django_assert_max_num_queries
):
    kept = waiting_run("kept")
    for n in range(10):
        waiting_run(f"other {n}")
    with django_assert_max_num_queries(BUDGET["waiting"]):
        ids = listed(admin_client, "waiting", f"?workflow={kept.id}")
    assert ids == job_ids(kept, "second", "third")
    html = page(admin_client, "job-list", "waiting", query="?workflow=abc")
    assert "Some filters are not valid" in html


def test_cancelling_a_waiting_step_fails_it_and_its_dependents(admin_client):
    run = waiting_run()
    asked = admin_client.post(url("job-cancel", run["second"].id)).content.decode()
    assert f"Cancel job #{run['second'].id}" in asked
    admin_client.post(url("job-cancel", run["second"].id), confirm_form(asked))
    assert not WaitingExecution.objects.filter(job_id=run["second"].id).exists()
    html = page(admin_client, "workflow-detail", run.id)
    assert node_class(html, run["second"].id) == "state-failed"
    assert node_class(html, run["third"].id) == "state-dependency-failed"


def test_discarding_every_waiting_step_of_a_run_in_bulk(admin_client):
    run = waiting_run()
    other = waiting_run("other")
    path = url("jobs-discard", "waiting")
    asked = admin_client.post(path, {"scope": "all", "workflow": run.id}).content.decode()
    assert "Discard 2 jobs" in asked and f"Workflow={run.id}" in asked
    fields = confirm_form(asked)
    assert fields["workflow"] == [str(run.id)]
    admin_client.post(path, fields)
    assert listed(admin_client, "waiting") == job_ids(other, "second", "third")
    assert not Job.objects.filter(pk__in=job_ids(run, "second", "third")).exists()
    assert WorkflowRun.objects.get(pk=run.id).failed == 2


# A step's job page


def test_a_steps_job_page_names_its_run_step_upstream_and_downstream(admin_client):
    run = failing_run()

    html = page(admin_client, "job-detail", run["transform"].id)

    assert f'href="{url("workflow-detail", run.id)}">nightly report #{run.id}</a>' in html
    assert '<strong class="mono">transform</strong>' in html
    upstream = html[html.index('class="step-upstream"') :]
    assert upstream.startswith(
        f'class="step-upstream"><a class="mono" href="/jobs/{run["extract"].id}/">extract</a>'
    )
    downstream = html[html.index('class="step-downstream"') :]
    assert f'href="/jobs/{run["load"].id}/">load</a>' in downstream[: downstream.index("</dd>")]


def test_a_step_page_costs_one_query_more_than_a_plain_job(
    admin_client, django_assert_max_num_queries
):
    run = fan_out(30)
    with django_assert_max_num_queries(BUDGET["job"] + 1):
        html = page(admin_client, "job-detail", run["root"].id)
    assert html.count('class="mono" href="/jobs/') == 30


def test_a_plain_jobs_page_shows_no_workflow(admin_client, jobs):
    html = page(admin_client, "job-detail", jobs.finished.pk)
    assert "<dt>Workflow</dt>" not in html and "<dt>Batch</dt>" not in html


def test_a_waiting_steps_page_says_what_it_waits_for_and_offers_cancel_and_discard(admin_client):
    run = waiting_run()

    html = page(admin_client, "job-detail", run["second"].id)

    assert '<span class="badge state-waiting">Waiting</span>' in html
    assert "waiting for 1 of them" in html
    assert "Waiting for upstream steps" in html  # the timeline
    for action in ("cancel", "discard"):
        assert f'action="{url(f"job-{action}", run["second"].id)}"' in html
