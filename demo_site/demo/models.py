"""A model to pass to tasks: Steady Queue stores its primary key and fetches it at run time."""

from django.db import models


class Customer(models.Model):
    name = models.CharField(max_length=100, unique=True)
    email = models.EmailField()

    def __str__(self) -> str:
        return self.name
