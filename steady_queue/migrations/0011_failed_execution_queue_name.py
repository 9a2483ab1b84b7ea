from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def copy_queue_names(apps, schema_editor):
    """Give the failed jobs already there their job's queue."""
    failed = apps.get_model("steady_queue", "FailedExecution")
    job = apps.get_model("steady_queue", "Job")
    queue = job.objects.filter(pk=OuterRef("job_id")).values("queue_name")[:1]
    failed.objects.using(schema_editor.connection.alias).update(queue_name=Subquery(queue))


class Migration(migrations.Migration):
    """Count failed jobs per queue from an index of their own, without reading the jobs."""

    dependencies = [
        ("steady_queue", "0010_failed_exception_class_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="failedexecution",
            name="queue_name",
            field=models.CharField(default="", max_length=255),
        ),
        migrations.RunPython(copy_queue_names, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="failedexecution",
            index=models.Index(fields=["queue_name", "exception_class"], name="sq_failed_queue"),
        ),
    ]
