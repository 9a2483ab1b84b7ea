from django.urls import include, path

urlpatterns = [
    path("jobs/", include("steady_queue_dashboard.urls")),
    path("jobs-billing/", include("steady_queue_dashboard.urls", namespace="billing")),
]
