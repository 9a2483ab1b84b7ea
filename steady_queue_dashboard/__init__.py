"""Steady Queue's ops dashboard, mounted with ``include("steady_queue_dashboard.urls")``."""
