"""Models used as task arguments in the tests (the "tests" app).

The package also holds the tests of ``steady_queue.models``; Django imports only this.
"""

import uuid

from django.db import models


class Account(models.Model):
    name = models.CharField(max_length=100)


class Document(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    title = models.CharField(max_length=100)


class TransactionalWrite(models.Model):
    """A row a ``@transactional`` test task writes (tests/tasks/transactional.py).

    No unique constraint: a body whose writes were kept twice would show as two rows.
    """

    token = models.CharField(max_length=100)
    attempt = models.PositiveIntegerField(default=1)
