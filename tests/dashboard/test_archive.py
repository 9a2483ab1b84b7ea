"""The console's Archive: the list and its search, an archived job's page, and "Restore as a
new job" (confirmed, audited, behind ``edit_jobs``, never a 500); the Retention panel."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

import steady_queue
from steady_queue import arguments
from steady_queue.labels import labels
from steady_queue.models import ArchivedJob, FailedExecution, Job, PruneTally, states
from steady_queue.models.archived_job import SEPARATOR
from steady_queue.retention import Retention
from steady_queue.retention.pruning import prune
from steady_queue.testing import run_ready_jobs
from steady_queue_dashboard.models import AuditEntry
from tests.tasks import dashboard as dashboard_tasks

pytestmark = pytest.mark.django_db

# Session, user, one page of archived rows.
LIST_QUERIES = 3
# + whether the task typed is a full path (then its index is used).
SEARCH_QUERIES = 4
# Session, user, the row.
DETAIL_QUERIES = 3
# Session, user, the edit permission (the user's and its groups'), the row.
RESTORE_PAGE_QUERIES = 5
# Session, user, the prune tallies of the day.
RETENTION_QUERIES = 3


def url(name: str, *args) -> str:
    return reverse(f"steady_queue_dashboard:{name}", args=args)


def archived(
    task: str = "tests.tasks.dashboard.fail",
    args: list | None = None,
    kwargs: dict | None = None,
    *,
    labels: list[str] = (),
    error: tuple[str, str] = ("RuntimeError", "it broke"),
    queue: str = "default",
    ago: timedelta = timedelta(hours=1),
    job_id: int = 1,
    **values,
) -> ArchivedJob:
    """A row as the pruning writes it (the retention branch owns how it gets there)."""
    ended = timezone.now() - ago
    stored = arguments.serialize(args if args is not None else ["it broke"], kwargs or {})
    attempt = {
        "worker_id": "worker-1",
        "started_at": (ended - timedelta(seconds=2)).isoformat(),
        "finished_at": ended.isoformat(),
        "error": {"exception_class": error[0], "message": error[1], "traceback": "Traceback …"},
    }
    fields = {
        "job_id": job_id,
        "queue_name": queue,
        "task_path": task,
        "arguments": stored,
        "labels": list(labels),
        "label_index": SEPARATOR.join(["", *labels, ""]) if labels else "",
        "attempts": [attempt],
        "state": states.FAILED,
        "exception_class": error[0],
        "error_message": error[1],
        "backtrace": "Traceback (most recent call last): …",
        "enqueued_at": ended - timedelta(seconds=5),
        "ended_at": ended,
        "archived_at": ended + timedelta(minutes=30),
        "rule": "failed jobs kept 30 days, then archived",
        **values,
    }
    return ArchivedJob.objects.create(**fields)


def listed(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'id="archived-row-(\d+)"', html)]


def token_of(html: str) -> str:
    found = re.search(r'name="confirm" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


@pytest.fixture
def editor(db) -> Client:
    """Staff with the edit permission only (what a duplicate needs)."""
    user = User.objects.create_user("editor", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="edit_jobs"))
    client = Client()
    client.force_login(user)
    return client


# The list and its search


def test_an_empty_archive_says_how_jobs_get_there(admin_client, django_assert_max_num_queries):
    with django_assert_max_num_queries(LIST_QUERIES):
        response = admin_client.get(url("archive-list"))
    page = response.content.decode()
    assert response.status_code == 200
    assert "The archive is empty" in page and "archive=True" in page
    assert f'href="{url("archive-list")}" aria-current="page"' in page


def test_archived_jobs_are_listed_newest_first_with_task_error_and_labels(admin_client):
    old = archived(ago=timedelta(days=2), job_id=10)
    new = archived(
        "tests.tasks.dashboard.record", [], {"account_id": 7}, labels=["tenant:acme"], job_id=11
    )

    page = admin_client.get(url("archive-list")).content.decode()

    assert listed(page) == [new.pk, old.pk]
    row = page[page.index(f'id="archived-row-{new.pk}"') :]
    row = row[: row.index("</tr>")]
    assert "was job #11" in row and "tests.tasks.dashboard.record" in row
    assert "account_id=7" in row and "RuntimeError</span>: it broke" in row
    assert f'href="{url("archive-list")}?label=tenant%3Aacme"' in row
    assert f'href="{url("archive-detail", new.pk)}"' in row


def test_search_by_part_of_the_task_by_its_full_path_and_by_error_text(
    admin_client, django_assert_max_num_queries
):
    card = archived(error=("CardDeclined", "card declined by bank"))
    timeout = archived("tests.tasks.dashboard.record", error=("TimeoutError", "partner slow"))

    def search(query: str) -> list[int]:
        with django_assert_max_num_queries(SEARCH_QUERIES):
            response = admin_client.get(url("archive-list") + query)
        assert response.status_code == 200
        return listed(response.content.decode())

    assert search("?task=record") == [timeout.pk]
    assert search("?task=tests.tasks.dashboard.fail") == [card.pk]
    assert search("?error=declined") == [card.pk]
    assert search("?error=timeouterror") == [timeout.pk]
    assert search("?error=nothing+like+it") == []
    assert (
        "No archived job matches this search."
        in admin_client.get(url("archive-list") + "?error=nothing").content.decode()
    )


def test_search_by_labels_all_or_any_matches_whole_labels_only(admin_client):
    both = archived(labels=["tenant:acme", "urgent"])
    acme = archived(labels=["tenant:acme"])
    prefix = archived(labels=["tenant:acme-2"])

    def search(query: str) -> set[int]:
        return set(listed(admin_client.get(url("archive-list") + query).content.decode()))

    assert search("?label=tenant:acme") == {both.pk, acme.pk}
    assert search("?label=tenant:acme&label=urgent") == {both.pk}
    assert search("?label=urgent&label=tenant:acme-2&label_mode=any") == {both.pk, prefix.pk}


@pytest.mark.parametrize(
    "query",
    ["?task=%00", "?label=%00", "?error=" + "x" * 300, "?page_after=garbage", "?label_mode=odd"],
)
def test_bad_search_input_is_a_form_error_never_a_500(admin_client, query):
    archived()
    response = admin_client.get(url("archive-list") + query)
    assert response.status_code == 200


def test_thousands_of_rows_page_by_keyset_in_constant_queries(
    admin_client, django_assert_max_num_queries
):
    now = timezone.now()
    rows = [
        ArchivedJob(
            job_id=n,
            queue_name="default",
            task_path="tests.tasks.dashboard.fail",
            arguments=arguments.serialize([f"error {n}"], {}),
            state=states.FAILED,
            exception_class="RuntimeError",
            error_message=f"error {n}",
            enqueued_at=now,
            ended_at=now,
            archived_at=now - timedelta(seconds=n // 3),  # ties: the id breaks them
        )
        for n in range(2500)
    ]
    ArchivedJob.objects.bulk_create(rows, batch_size=500)

    seen, query = [], ""
    for _page in range(3):
        with django_assert_max_num_queries(LIST_QUERIES):
            page = admin_client.get(url("archive-list") + query).content.decode()
        seen += listed(page)
        after = re.search(r'href="[^"]*\?page_after=([^"&]+)"', page).group(1)
        query = f"?page_after={after}"
    assert len(seen) == 150 == len(set(seen))
    expected = ArchivedJob.objects.order_by("-archived_at", "-pk").values_list("pk", flat=True)
    assert seen == list(expected[:150])


def test_htmx_gets_the_table_only(htmx):
    row = archived()
    page = htmx.get(url("archive-list")).content.decode()
    assert page.startswith('<div id="archive-table"') and f"archived-row-{row.pk}" in page


# An archived job's page


def test_the_page_shows_masked_arguments_attempts_error_and_labels(
    admin_client, django_assert_max_num_queries
):
    row = archived(
        "tests.tasks.masked.charge",
        ["4111-1111-1111-1111", 10],
        {"note": "x", "api_password": "hunter2"},
        labels=["billing"],
        error=("CardDeclined", "declined"),
    )

    with django_assert_max_num_queries(DETAIL_QUERIES):
        response = admin_client.get(url("archive-detail", row.pk))
    page = response.content.decode()

    assert response.status_code == 200
    assert "4111" not in page and "hunter2" not in page and "[masked]" in page
    assert "10" in page and '"note": "x"' in page.replace("&quot;", '"')
    assert 'id="archived-attempts"' in page and "worker-1" in page
    assert "CardDeclined" in page and "Traceback (most recent call last)" in page
    assert f'href="{url("archive-list")}?label=billing"' in page
    assert f'href="{url("archive-restore", row.pk)}"' in page


def test_a_missing_archived_job_is_a_404(admin_client):
    assert admin_client.get(url("archive-detail", 999)).status_code == 404
    assert admin_client.get(url("archive-restore", 999)).status_code == 404


def test_only_staff_with_edit_jobs_see_and_use_restore(viewer_client, operator_client, editor):
    row = archived()
    for client in (viewer_client, operator_client):
        page = client.get(url("archive-detail", row.pk)).content.decode()
        assert 'id="archive-restore"' not in page
        assert client.get(url("archive-restore", row.pk)).status_code == 403
        assert client.post(url("archive-restore", row.pk)).status_code == 403
    assert 'id="archive-restore"' in editor.get(url("archive-detail", row.pk)).content.decode()
    assert not Job.objects.exists()


# Restore


def test_restore_asks_first_then_enqueues_a_new_job_linked_and_audited(
    editor, django_assert_max_num_queries
):
    row = archived(
        "tests.tasks.masked.charge", ["4111-1111", 25], {"note": "again"}, labels=["billing"]
    )

    with django_assert_max_num_queries(RESTORE_PAGE_QUERIES):
        asked = editor.get(url("archive-restore", row.pk))
    page = asked.content.decode()
    assert asked.status_code == 200 and "Restore as a new job" in page
    assert "4111" not in page and "[masked]" in page
    assert not Job.objects.exists()  # asking writes nothing

    done = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)}, follow=True)

    job = Job.objects.get()
    assert done.redirect_chain == [(url("job-detail", job.pk), 302)]
    assert f"Archived job {row.pk} (was job {row.job_id}) was restored as job {job.pk}." in (
        done.content.decode()
    )
    assert job.task_path == "tests.tasks.masked.charge" and job.labels == ["billing"]
    assert arguments.display(job.arguments) == (["4111-1111", 25], {"note": "again"})
    row.refresh_from_db()
    assert row.restored_job_id == job.pk
    page = editor.get(url("archive-detail", row.pk)).content.decode()
    assert f'<a href="{url("job-detail", job.pk)}">job #{job.pk}</a>' in page
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.succeeded) == ("editor", "restore", True)
    assert entry.link == url("job-detail", job.pk)
    assert "4111" not in str(entry.details)


def test_a_post_without_the_pages_token_only_asks_again(editor):
    row = archived()
    for data in ({}, {"confirm": "forged"}):
        response = editor.post(url("archive-restore", row.pk), data)
        assert response.status_code == 200 and "Restore as a new job" in response.content.decode()
    assert not Job.objects.exists() and not AuditEntry.objects.exists()


def test_a_token_for_another_archived_job_does_not_restore_this_one(editor):
    first, second = archived(job_id=1), archived(job_id=2)
    token = token_of(editor.get(url("archive-restore", first.pk)).content.decode())
    response = editor.post(url("archive-restore", second.pk), {"confirm": token})
    assert 'id="restore-stale"' in response.content.decode()
    assert not Job.objects.exists()


def test_a_task_that_no_longer_imports_is_a_clear_message_with_nothing_written(editor):
    row = archived("tests.tasks.gone_module.vanished")

    page = editor.get(url("archive-restore", row.pk)).content.decode()
    assert 'id="restore-refused"' in page and "cannot be imported" in page
    assert "Restore as a new job</button>" not in page

    response = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)})
    assert response.status_code == 200 and "cannot be imported" in response.content.decode()
    assert not Job.objects.exists() and not AuditEntry.objects.exists()


def test_a_task_module_that_raises_as_it_imports_is_a_message_not_a_500(editor, monkeypatch):
    row = archived()

    def broken(self):
        raise RuntimeError("settings missing at import")

    monkeypatch.setattr(ArchivedJob, "task", broken)
    page = editor.get(url("archive-restore", row.pk)).content.decode()
    assert "RuntimeError: settings missing at import" in page
    response = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)})
    assert response.status_code == 200 and not Job.objects.exists()


def test_arguments_the_task_no_longer_takes_are_refused(editor):
    row = archived("tests.tasks.dashboard.fail", ["a", "b", "c"])
    page = editor.get(url("archive-restore", row.pk)).content.decode()
    response = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)})
    assert "cannot take these arguments" in response.content.decode()
    assert not Job.objects.exists()


def test_an_enqueue_the_engine_refuses_is_a_message_with_nothing_written(editor):
    # Its queue was removed from TASKS["QUEUES"] since it was archived.
    row = archived(queue="retired")
    page = editor.get(url("archive-restore", row.pk)).content.decode()

    response = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)})

    assert response.status_code == 200
    assert 'id="restore-refused"' in response.content.decode()
    assert "retired" in response.content.decode()
    assert not Job.objects.exists() and not AuditEntry.objects.exists()
    row.refresh_from_db()
    assert row.restored_job_id is None


def test_a_task_that_raises_while_enqueueing_is_a_message_not_a_500(editor, monkeypatch):
    row = archived()
    page = editor.get(url("archive-restore", row.pk)).content.decode()

    def explode(self, *args, **kwargs):
        raise RuntimeError("key function failed")

    monkeypatch.setattr(ArchivedJob, "restore", explode)
    response = editor.post(url("archive-restore", row.pk), {"confirm": token_of(page)})
    assert response.status_code == 200 and "RuntimeError: key function failed" in (
        response.content.decode()
    )
    assert not Job.objects.exists()


def test_a_job_the_pruning_archived_is_found_shown_and_restored(editor, monkeypatch):
    """End to end through the engine: fail, prune with an archive rule, search, restore."""
    rule = Retention(state="failed", keep=timedelta(days=1), archive=True)
    monkeypatch.setattr(steady_queue, "retention_rules", [rule])
    with labels("tenant:acme"):
        job_id = int(dashboard_tasks.fail.enqueue("card declined").id)
    run_ready_jobs()
    FailedExecution.objects.filter(job_id=job_id).update(
        created_at=timezone.now() - timedelta(days=2)
    )
    prune(pause=0)
    assert not Job.objects.filter(pk=job_id).exists()

    query = "?task=dashboard.fail&error=declined&label=tenant:acme"
    page = editor.get(url("archive-list") + query).content.decode()
    (row,) = ArchivedJob.objects.filter(job_id=job_id)
    assert listed(page) == [row.pk] and row.rule == rule.describe()
    detail = editor.get(url("archive-detail", row.pk)).content.decode()
    assert "RuntimeError" in detail and 'id="archived-attempts"' in detail
    panel = editor.get(url("retention")).content.decode()
    assert rule.describe() in panel

    asked = editor.get(url("archive-restore", row.pk)).content.decode()
    editor.post(url("archive-restore", row.pk), {"confirm": token_of(asked)})
    restored = Job.objects.get()
    assert restored.labels == ["tenant:acme"] and restored.task_path == row.task_path


# The Retention panel


def test_the_panel_shows_the_defaults_when_no_rule_is_configured(
    admin_client, django_assert_max_num_queries
):
    with django_assert_max_num_queries(RETENTION_QUERIES):
        response = admin_client.get(url("retention"))
    page = response.content.decode()
    assert response.status_code == 200 and 'id="retention-no-rules"' in page
    assert "succeeded jobs kept 1 day" in page and "failed jobs kept for ever" in page


def test_each_rule_shows_what_it_removed_and_archived_in_the_last_day(
    admin_client, monkeypatch, django_assert_max_num_queries
):
    failed = Retention(state="failed", keep=timedelta(days=30), archive=True)
    bulk = Retention(queue="bulk", state="succeeded", keep=timedelta(hours=1))
    monkeypatch.setattr(steady_queue, "retention_rules", [failed, bulk])
    now = timezone.now()
    PruneTally.objects.create(rule=failed.describe(), removed=40, archived=40, ran_at=now)
    PruneTally.objects.create(
        rule=failed.describe(), removed=2, archived=2, ran_at=now - timedelta(hours=3)
    )
    PruneTally.objects.create(rule=failed.describe(), removed=999, ran_at=now - timedelta(days=2))
    PruneTally.objects.create(rule="finished batches after 7 days", kind="batches", removed=3)

    with django_assert_max_num_queries(RETENTION_QUERIES):
        page = admin_client.get(url("retention")).content.decode()

    rules = page[page.index('id="retention-rules"') : page.index("</table>")]
    row = rules[rules.index(failed.describe()) :]
    row = row[: row.index("</tr>")]
    assert ">42<" in row.replace(" ", "") and "archived" in row
    row = rules[rules.index(bulk.describe()) :]
    assert ">0<" in row[: row.index("</tr>")] and "not in the last day" in row
    assert "(default)" in rules  # cancelled: kept for ever, no rule of the setting
    others = page[page.index('id="retention-others"') :]
    assert "finished batches after 7 days" in others and ">3<" in others


def test_bad_rules_are_named_on_the_panel_not_a_500(admin_client, monkeypatch):
    bad = Retention(state="exploded", keep=timedelta(days=-1))
    monkeypatch.setattr(steady_queue, "retention_rules", [bad])
    response = admin_client.get(url("retention"))
    page = response.content.decode()
    assert response.status_code == 200 and 'id="retention-problems"' in page
    assert "exploded" in page and "may not be negative" in page


def test_the_archive_links_to_the_retention_panel(admin_client):
    assert f'href="{url("retention")}"' in admin_client.get(url("archive-list")).content.decode()


def test_htmx_gets_the_panel_only(htmx):
    assert htmx.get(url("retention")).content.decode().startswith('<section id="retention-panel"')
