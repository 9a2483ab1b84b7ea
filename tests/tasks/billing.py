"""Tasks of the "billing" backend, whose jobs live in their own queue database."""

from steady_queue.compat import task


@task(backend="billing")
def invoice(number):
    return f"invoice {number}"


@task(backend="billing")
def refuse(number):
    raise ValueError(f"invoice {number} refused")
