from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from . import seeding


@require_GET
def home(request):
    return render(request, "demo/home.html")


@require_POST
@staff_member_required
def enqueue_batch(request):
    count = seeding.enqueue_batch()
    messages.success(request, f"Enqueued {count} demo jobs.")
    return redirect("home")
