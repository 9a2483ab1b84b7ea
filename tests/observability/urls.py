from django.urls import path

from steady_queue.health import health_view

urlpatterns = [path("queue/health", health_view)]
