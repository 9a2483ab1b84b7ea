"""Tasks of the "billing" backend, whose jobs live in their own queue database."""

from steady_queue.compat import task


@task(backend="billing", queue_name="invoices")
def invoice(number):
    return f"invoice {number}"


@task(backend="billing", queue_name="invoices")
def refuse(number):
    raise ValueError(f"invoice {number} refused")
