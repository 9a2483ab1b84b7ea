"""Scrape ``metrics_view`` and read the samples back with prometheus_client's own parser."""

from __future__ import annotations

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

URL = "/queue/metrics"
TOKEN = "scrape-secret"


def scrape(client: Client | None = None, data=None, **headers) -> dict[tuple, float]:
    """{(sample name, (label, value)...): value} of one successful scrape."""
    headers.setdefault("HTTP_AUTHORIZATION", f"Bearer {TOKEN}")
    response = (client or Client()).get(URL, data, **headers)
    assert response.status_code == 200, response.content
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, *sorted(sample.labels.items()))] = sample.value
    return samples


def sample(samples: dict, name: str, **labels: str) -> float | None:
    return samples.get((name, *sorted(labels.items())))
