from django.urls import include, path

from steady_queue.metrics import metrics_view

urlpatterns = [
    path("queue/metrics", metrics_view),
    path("jobs/", include("steady_queue_dashboard.urls")),
]
