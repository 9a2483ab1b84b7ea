from django.urls import path

from steady_queue.health import health_view
from steady_queue.metrics import metrics_view

urlpatterns = [path("queue/health", health_view), path("queue/metrics", metrics_view)]
