"""The workload both group-coordinator benchmarks drive (consumer_group, share_group).

A 200-member group subscribed to two topics (600 partitions) under churn: every
heartbeat interval ``CHURN_PER_ROUND`` members leave and as many join. Each
benchmark builds its coordinator on ``topics_metadata()`` with member ids from
``member_ids()``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from model.core.metadata import MetadataImage

GROUP = "bench"
MEMBERS = 200
ROUNDS = 60
CHURN_PER_ROUND = 2
TOPICS = {"orders": 400, "events": 200}


def topics_metadata() -> MetadataImage:
    """The cluster metadata the group's coordinator sees: ``TOPICS`` and their partition counts."""
    metadata = MetadataImage()
    for topic, partitions in TOPICS.items():
        metadata = metadata.with_topic(topic, partitions)
    return metadata


def member_ids() -> Callable[[], str]:
    """The coordinator's member-id factory: member-0, member-1, …"""
    ids = itertools.count()
    return lambda: f"member-{next(ids)}"
