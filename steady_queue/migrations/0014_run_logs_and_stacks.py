"""Job log lines (a running job's captured logging and print) and live stack requests."""


import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('steady_queue', '0013_recurring_runtime'),
    ]

    operations = [
        migrations.CreateModel(
            name='StackRequest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('job_id', models.BigIntegerField(db_index=True, verbose_name='job id')),
                ('requested_at', models.DateTimeField(default=django.utils.timezone.now, verbose_name='requested at')),
                ('answered_at', models.DateTimeField(blank=True, null=True, verbose_name='answered at')),
                ('answer', models.JSONField(blank=True, null=True, verbose_name='answer')),
            ],
            options={
                'verbose_name': 'stack request',
                'verbose_name_plural': 'stack requests',
                'db_table': 'steady_queue_stack_requests',
                'indexes': [models.Index(fields=['answered_at', 'job_id'], name='sq_stack_req_pending')],
            },
        ),
        migrations.CreateModel(
            name='JobLogLine',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('attempt', models.PositiveIntegerField(verbose_name='attempt')),
                ('number', models.PositiveIntegerField(verbose_name='line number')),
                ('logged_at', models.DateTimeField(verbose_name='logged at')),
                ('level', models.PositiveSmallIntegerField(verbose_name='level')),
                ('logger', models.CharField(max_length=200, verbose_name='logger')),
                ('message', models.TextField(verbose_name='message')),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='log_lines', to='steady_queue.job')),
            ],
            options={
                'verbose_name': 'job log line',
                'verbose_name_plural': 'job log lines',
                'db_table': 'steady_queue_job_log_lines',
                'constraints': [models.UniqueConstraint(fields=('job', 'attempt', 'number'), name='sq_job_log_line_number')],
            },
        ),
    ]
