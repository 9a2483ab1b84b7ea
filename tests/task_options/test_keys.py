"""Long keys are stored as digests, and a digest never equals a short key spelled like one.

Concurrency, unique and rate-limit keys alike: the databases that enforce column
lengths (PostgreSQL, MariaDB) must take a key of any length, and a short key that
looks like ``sha256:…`` must not share a semaphore, lock or window with a long key.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from steady_queue.models import Job, Semaphore
from steady_queue.task_options.concurrency import ConcurrencyLimit
from steady_queue.task_options.rate_limits import RateLimit
from tests.tasks import features
from tests.tasks import unique as unique_tasks

pytestmark = pytest.mark.django_db(transaction=True)

LONG = "account-" + "x" * 300


def state(result) -> str:
    return Job.objects.with_execution().get(pk=result.id).state


def test_a_concurrency_key_longer_than_the_column_is_enqueued_as_its_digest():
    first = features.per_account.enqueue(LONG)

    stored = Job.objects.get(pk=first.id).concurrency_key
    assert len(stored) <= 255 and stored.endswith("/sha256:" + stored.rsplit(":", 1)[1])
    assert state(first) == "ready"
    # The same long key is the same semaphore: the second job waits for the first.
    assert state(features.per_account.enqueue(LONG)) == "blocked"
    assert state(features.per_account.enqueue(LONG + "y")) == "ready"
    assert Semaphore.objects.filter(key=stored).get().value == 0


def test_a_short_concurrency_key_spelled_like_a_digest_is_another_key():
    first = features.per_account.enqueue(LONG)
    digest = Job.objects.get(pk=first.id).concurrency_key.split("/", 1)[1]

    lookalike = features.per_account.enqueue(digest)

    assert state(lookalike) == "ready"
    assert (
        Job.objects.get(pk=lookalike.id).concurrency_key
        != Job.objects.get(pk=first.id).concurrency_key
    )


def test_short_concurrency_keys_are_kept_as_they_were():
    limit = ConcurrencyLimit(key=lambda name: name, group="g")
    assert limit.key_for(["a" * 253], {}) == "g/" + "a" * 253


def test_a_group_too_long_for_group_and_digest_digests_the_whole_key():
    limit = ConcurrencyLimit(key=lambda name: name, group="g" * 250)
    long_key, short_key = limit.key_for(["k" * 10], {}), limit.key_for(["k"], {})
    assert long_key.startswith("sha256:") and len(long_key) == 71
    assert long_key != short_key


def test_a_short_unique_key_spelled_like_a_digest_is_not_the_long_keys_duplicate():
    first = unique_tasks.long_key.enqueue(LONG)
    digest = Job.objects.get(pk=first.id).unique_key
    assert digest.startswith("sha256:")

    lookalike = unique_tasks.long_key.enqueue(digest)

    assert lookalike.id != first.id
    assert unique_tasks.long_key.enqueue(LONG).id == first.id


def test_a_short_rate_limit_key_spelled_like_a_digest_is_another_window():
    limit = RateLimit(to=1, per=timedelta(minutes=1), key=lambda text: text)
    digest = limit.key_for(features.tick, [LONG], {})
    assert digest.startswith("sha256:") and len(digest) == 71

    assert limit.key_for(features.tick, [digest], {}) != digest
    assert limit.key_for(features.tick, ["customer-7"], {}) == "customer-7"
