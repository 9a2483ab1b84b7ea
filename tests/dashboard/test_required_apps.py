"""Without django-htmx or django-filters: a system check names what the dashboard needs,
and its pages still render without the htmx middleware (issue 10, defect 6)."""

from __future__ import annotations

import pytest
from django.core import checks
from django.test import override_settings

from .page_forms import url

pytestmark = pytest.mark.django_db


WITHOUT_HTMX = [m for m in __import__("tests.settings").settings.MIDDLEWARE if "htmx" not in m]


def test_pages_render_without_the_htmx_middleware(admin_client, jobs):
    with override_settings(MIDDLEWARE=WITHOUT_HTMX):
        for page in ("overview", "queue-list", "process-list", "recurring-list", "audit-log"):
            assert admin_client.get(url(page)).status_code == 200, page
        assert admin_client.get(url("job-list", "failed")).status_code == 200
        assert admin_client.get(url("job-detail", jobs.failed.pk)).status_code == 200
        assert admin_client.get(url("job-detail", 987654)).status_code == 404


def _dashboard_messages() -> dict[str, str]:
    found = checks.run_checks(include_deployment_checks=False)
    messages: dict[str, str] = {}
    for m in found:
        if m.id and m.id.startswith("steady_queue_dashboard."):
            messages[m.id] = messages.get(m.id, "") + m.msg
    return messages


def test_system_checks_name_what_the_dashboard_needs():
    assert _dashboard_messages() == {}
    with override_settings(MIDDLEWARE=WITHOUT_HTMX):
        assert "steady_queue_dashboard.E002" in _dashboard_messages()
    from django.conf import settings

    apps = [app for app in settings.INSTALLED_APPS if app not in ("django_htmx", "django_filters")]
    with override_settings(INSTALLED_APPS=apps):
        found = _dashboard_messages()
    assert {"steady_queue_dashboard.E001"} <= set(found)
    assert "django_htmx" in found["steady_queue_dashboard.E001"]
    assert "django_filters" in found["steady_queue_dashboard.E001"]
