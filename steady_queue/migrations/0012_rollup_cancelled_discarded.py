from django.db import migrations, models


class Migration(migrations.Migration):
    """Cancelled jobs are their own outcome in the rollups; discarded ones are apart.

    The column ``cancelled`` counted pending jobs an operator discarded (or cancelled)
    before they ran: it becomes ``discarded``, its counts kept. The new ``cancelled``
    counts jobs that ended with JobCancelled, before they started or while running
    (until now counted as failed when running).
    """

    dependencies = [
        ("steady_queue", "0011_failed_execution_queue_name"),
    ]

    operations = [
        migrations.RenameField(model_name="taskrollup", old_name="cancelled", new_name="discarded"),
        migrations.AddField(
            model_name="taskrollup",
            name="cancelled",
            field=models.PositiveBigIntegerField(default=0),
        ),
    ]
