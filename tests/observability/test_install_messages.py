"""An extra that is missing is named by its packages, not by ``pip install
'steady-queue[...]'``: that name on the package index is another project (issue 25, 18)."""

from __future__ import annotations

import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory

from steady_queue.metrics import metrics_view


def test_metrics_without_prometheus_client_names_the_package_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails as if absent
    monkeypatch.delitem(sys.modules, "steady_queue.metrics.collector", raising=False)

    with pytest.raises(ImproperlyConfigured) as raised:
        metrics_view(RequestFactory().get("/metrics"))

    message = str(raised.value)
    assert "prometheus-client" in message
    assert "pip install 'steady-queue" not in message
    assert "checkout" in message
