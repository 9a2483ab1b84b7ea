"""The demo's URLs, plus the queue's health check and Prometheus metrics."""

from django.urls import path

from config.urls import urlpatterns as demo_urlpatterns
from steady_queue.health import health_view
from steady_queue.metrics import metrics_view

urlpatterns = [
    *demo_urlpatterns,
    path("queue/health", health_view),
    path("queue/metrics", metrics_view),
]
