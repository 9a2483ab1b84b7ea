"""The audit log: one row per action taken from the dashboard."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class AuditEntry(models.Model):
    """Who did what to which object, when, and how it turned out."""

    created_at = models.DateTimeField(_("when"), default=timezone.now, db_index=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    # Kept apart from the foreign key so that the entry survives the user's deletion.
    username = models.CharField(_("username"), max_length=150)
    action = models.CharField(_("action"), max_length=50)
    target = models.CharField(_("target"), max_length=500)
    affected = models.PositiveIntegerField(_("affected"), default=0)
    succeeded = models.BooleanField(_("succeeded"), default=True)
    message = models.TextField(_("message"), blank=True)
    # Where the target's page is, and what it was when acted on: a discarded job's row is
    # gone, so its task, queue, arguments (masked) and state live on here.
    link = models.CharField(_("link"), max_length=500, blank=True)
    details = models.JSONField(_("details"), default=dict, blank=True)

    class Meta:
        verbose_name = _("audit entry")
        verbose_name_plural = _("audit entries")
        ordering = ["-created_at", "-pk"]
        # Changing what runs (a schedule's cron, task or arguments), beyond manage_jobs's
        # retry, discard, pause: steady_queue_dashboard.access.EDIT_PERMISSION.
        # Reading what an encrypted task stored (steady_queue.encryption), each time audited:
        # steady_queue_dashboard.access.REVEAL_PERMISSION.
        permissions = [
            ("edit_jobs", _("Can create and edit jobs and recurring schedules in the console")),
            ("reveal_arguments", _("Can reveal the encrypted arguments and results of jobs")),
        ]

    def __str__(self) -> str:
        return f"{self.username} {self.action} {self.target}"
