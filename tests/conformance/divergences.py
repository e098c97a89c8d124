"""Why a translated Kafka test does not pass against ``model/core``: the one vocabulary.

Every failing conformance test is marked ``@xfail(strict=True)`` through ``classified``, by way
of ``divergence(name)`` (sharesim does something else on purpose, or where Kafka's choice is
not the KIP's) or ``missing(name)`` (a mechanism of the Kafka that ships that the model does
not have yet, issue 24). A name not listed here is a collection error, and a marked test that
starts to pass fails the run (strict), so the lists stay true.
"""

from __future__ import annotations

from typing import Final

import pytest

from model.kafka_divergences import DIVERGENCES as KAFKA_DIVERGENCES

# Deliberate differences from Kafka trunk at the pinned commit: the model's one list
# (model/kafka_divergences.py), plus what this suite alone needs.
DIVERGENCES: Final[dict[str, str]] = {
    **{d.name: f"{d.sharesim}; trunk: {d.kafka} ({d.why})" for d in KAFKA_DIVERGENCES},
}

# Mechanisms of the Kafka that ships that the model lacks (issue 24's list).
MISSING: Final[dict[str, str]] = {
}


def classified(kind: str, name: str) -> pytest.MarkDecorator:
    """The one marker: a strict xfail whose reason starts with the kind and the listed name."""
    table = DIVERGENCES if kind == "divergence" else MISSING
    if name not in table:
        raise KeyError(f"{kind} {name!r} is not listed in tests/conformance/divergences.py")
    return pytest.mark.xfail(strict=True, reason=f"{kind}:{name}: {table[name]}")


def divergence(name: str) -> pytest.MarkDecorator:
    return classified("divergence", name)


def missing(name: str) -> pytest.MarkDecorator:
    return classified("missing", name)
