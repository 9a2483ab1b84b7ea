from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("steady_queue_dashboard", "0001_initial")]

    operations = [
        # Audit entries link to what they acted on and keep what it was then.
        migrations.AddField(
            model_name="auditentry",
            name="link",
            field=models.CharField(blank=True, max_length=500, verbose_name="link"),
        ),
        migrations.AddField(
            model_name="auditentry",
            name="details",
            field=models.JSONField(blank=True, default=dict, verbose_name="details"),
        ),
    ]
