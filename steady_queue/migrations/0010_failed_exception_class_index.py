from django.db import migrations, models


class Migration(migrations.Migration):
    """Serve the cancelled jobs' list and count (their failure's class) from an index."""

    dependencies = [
        ("steady_queue", "0009_claimed_process_one_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="failedexecution",
            index=models.Index(
                fields=["exception_class", "-created_at", "job"], name="sq_failed_class"
            ),
        ),
    ]
