"""The finished history (``FinishedHistory``): a table partitioned by day, PostgreSQL only.

Django does not manage the table (``managed = False``): the model's state is recorded
here, and the partitioned parent is created with SQL on PostgreSQL. MariaDB and SQLite
get no table: ``steady_queue.partition_finished_by`` is ignored there (batch deletes). The
day partitions are the maintenance's to create and drop (``steady_queue.retention.history``).
"""

import django.utils.timezone
from django.db import migrations, models

CREATE = """
CREATE TABLE IF NOT EXISTS steady_queue_finished_history (
    id bigint NOT NULL,
    queue_name varchar(255) NOT NULL,
    task_path varchar(255) NOT NULL,
    backend varchar(100) NOT NULL,
    arguments jsonb NOT NULL,
    priority smallint NOT NULL,
    labels jsonb NOT NULL,
    attempts jsonb NOT NULL,
    metadata jsonb NOT NULL,
    return_value jsonb NULL,
    batch_id bigint NULL,
    workflow_run_id bigint NULL,
    created_at timestamp with time zone NOT NULL,
    scheduled_at timestamp with time zone NULL,
    finished_at timestamp with time zone NOT NULL,
    moved_at timestamp with time zone NOT NULL,
    PRIMARY KEY (id, finished_at)
) PARTITION BY RANGE (finished_at);
CREATE INDEX IF NOT EXISTS sq_history_finished
    ON steady_queue_finished_history (finished_at, id);
"""

# Dropping the parent drops every day partition with it.
DROP = "DROP TABLE IF EXISTS steady_queue_finished_history"


def create_table(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop_table(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("steady_queue", "0019_retention"),
    ]

    operations = [
        migrations.CreateModel(
            name="FinishedHistory",
            fields=[
                (
                    "id",
                    models.BigIntegerField(primary_key=True, serialize=False, verbose_name="job id"),
                ),
                ("queue_name", models.CharField(max_length=255, verbose_name="queue")),
                ("task_path", models.CharField(max_length=255, verbose_name="task")),
                (
                    "backend",
                    models.CharField(default="default", max_length=100, verbose_name="backend"),
                ),
                ("arguments", models.JSONField(default=dict, verbose_name="arguments")),
                ("priority", models.SmallIntegerField(default=0, verbose_name="priority")),
                ("labels", models.JSONField(blank=True, default=list, verbose_name="labels")),
                ("attempts", models.JSONField(blank=True, default=list, verbose_name="attempts")),
                ("metadata", models.JSONField(blank=True, default=dict, verbose_name="metadata")),
                (
                    "return_value",
                    models.JSONField(blank=True, null=True, verbose_name="return value"),
                ),
                ("batch_id", models.BigIntegerField(blank=True, null=True, verbose_name="batch")),
                (
                    "workflow_run_id",
                    models.BigIntegerField(blank=True, null=True, verbose_name="workflow run"),
                ),
                ("created_at", models.DateTimeField(verbose_name="enqueued at")),
                (
                    "scheduled_at",
                    models.DateTimeField(blank=True, null=True, verbose_name="scheduled at"),
                ),
                ("finished_at", models.DateTimeField(verbose_name="finished at")),
                (
                    "moved_at",
                    models.DateTimeField(
                        default=django.utils.timezone.now, verbose_name="moved to history at"
                    ),
                ),
            ],
            options={
                "verbose_name": "finished job in history",
                "verbose_name_plural": "finished history",
                "db_table": "steady_queue_finished_history",
                "managed": False,
            },
        ),
        migrations.RunPython(create_table, drop_table, elidable=False),
    ]
