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
