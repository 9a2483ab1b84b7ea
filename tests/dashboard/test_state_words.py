"""One word per state on the dashboard: lists are at the canonical word, and the old
spellings (``/jobs/pending/``, ``/jobs/in-progress/``) still serve the same list, so
that bookmarks keep working."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from steady_queue.models import states
from steady_queue_dashboard.listings import LISTINGS
from tests import tasks

pytestmark = pytest.mark.django_db


def rows(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'id="job-row-(\d+)"', html)]


def test_each_state_has_its_list_at_its_word():
    assert list(LISTINGS) == list(states.words())
    assert reverse("steady_queue_dashboard:job-list", args=["ready"]) == "/jobs/ready/"
    assert reverse("steady_queue_dashboard:job-list", args=["running"]) == "/jobs/running/"


def test_the_tabs_say_the_canonical_words(admin_client):
    html = admin_client.get("/jobs/ready/").content.decode()
    assert re.search(r'href="/jobs/ready/"[^>]*>Ready <span', html)
    assert re.search(r'href="/jobs/running/"[^>]*>Running <span', html)
    assert "Pending" not in html and "In progress" not in html


def test_the_old_spelling_pending_serves_the_ready_list(admin_client):
    job = tasks.noop.enqueue()
    old = admin_client.get("/jobs/pending/")
    assert old.status_code == 200
    assert rows(old.content.decode()) == [int(job.id)]
    assert rows(admin_client.get("/jobs/ready/").content.decode()) == [int(job.id)]


def test_the_old_spelling_in_progress_serves_the_running_list(admin_client):
    old = admin_client.get("/jobs/in-progress/")
    assert old.status_code == 200
    assert "No job is running." in old.content.decode()
    assert "No job is running." in admin_client.get("/jobs/running/").content.decode()


def test_an_unknown_status_is_no_page(admin_client):
    assert admin_client.get("/jobs/claimed/").status_code == 404
