from django.urls import include, path

urlpatterns = [path("jobs-nope/", include("steady_queue_dashboard.urls", namespace="nope"))]
