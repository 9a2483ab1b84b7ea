"""Prometheus metrics: ``metrics_view`` (install ``steady-queue[prometheus]``).

Everything is read from the queue database at scrape time, so one scrape of any web
process describes the whole deployment: queue depths and latency from the execution
tables, per-task counters and histograms from ``TaskRollup`` (written by every
worker), processes from their heartbeats. See docs/reference/logging-and-monitoring.md.
"""

from .views import metrics_view

__all__ = ["metrics_view"]
