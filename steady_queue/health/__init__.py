"""Health checks: ``manage.py steady_queue_health``, ``health_view`` and the liveness file."""

from .liveness import LivenessFile
from .problems import HealthCheck, Problem
from .views import health_view

__all__ = ["HealthCheck", "LivenessFile", "Problem", "health_view"]
