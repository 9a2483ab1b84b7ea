"""``manage.py steady_queue_rotate_keys``: re-encrypt stored jobs with the newest key."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from steady_queue.ops import audit, key_rotation


class Command(BaseCommand):
    help = (
        "Re-encrypt everything encrypted tasks stored (arguments, results, errors, metadata, "
        "log lines) with the first key of STEADY_QUEUE_ENCRYPTION_KEYS, in batches, so that "
        "the older keys can be removed. Run it until it re-encrypts nothing and reports no "
        "unreadable rows; --dry-run counts only."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--batch-size", type=int, default=500, help="Rows per transaction.")
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing.")

    def handle(self, *args, batch_size: int, dry_run: bool, **options) -> None:
        try:
            counts = key_rotation.rotate(
                batch_size=batch_size, dry_run=dry_run, report=self.stdout.write
            )
        except (ValueError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from exc
        rotated = sum(c.rotated for c in counts.values())
        unreadable = sum(c.unreadable for c in counts.values())
        verb = "Would re-encrypt" if dry_run else "Re-encrypted"
        self.stdout.write(f"{verb} {rotated} rows; {unreadable} unreadable (no key opens them).")
        if not dry_run and rotated:
            audit.record(
                "rotate keys",
                "encrypted data",
                affected=rotated,
                succeeded=True,
                message=f"Re-encrypted {rotated} rows with the newest key.",
                details={"tables": {name: c.rotated for name, c in counts.items()}},
            )
