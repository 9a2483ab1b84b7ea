"""Models used as task arguments in the tests."""

import uuid

from django.db import models


class Account(models.Model):
    name = models.CharField(max_length=100)


class Document(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    title = models.CharField(max_length=100)
