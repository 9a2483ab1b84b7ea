from django.contrib import admin
from django.urls import include, path

from demo import views

urlpatterns = [
    path("", views.home, name="home"),
    path("enqueue/", views.enqueue_batch, name="enqueue-batch"),
    path("admin/", admin.site.urls),
    path("jobs/", include("steady_queue_dashboard.urls")),
]
