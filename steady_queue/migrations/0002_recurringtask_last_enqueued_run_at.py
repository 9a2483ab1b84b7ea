from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def record_last_runs(apps, schema_editor):
    """Start the bookkeeping from the runs still recorded, so that catch-up repeats none."""
    task_model = apps.get_model("steady_queue", "RecurringTask")
    execution_model = apps.get_model("steady_queue", "RecurringExecution")
    alias = schema_editor.connection.alias
    latest = (
        execution_model.objects.using(alias)
        .filter(task_key=OuterRef("key"))
        .order_by("-run_at")
        .values("run_at")[:1]
    )
    task_model.objects.using(alias).update(last_enqueued_run_at=Subquery(latest))


class Migration(migrations.Migration):
    dependencies = [("steady_queue", "0001_initial")]

    operations = [
        # Catch-up bookkeeping on the task itself: it survives clearing finished jobs.
        migrations.AddField(
            model_name="recurringtask",
            name="last_enqueued_run_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(record_last_runs, migrations.RunPython.noop, elidable=True),
    ]
