"""Seeds, named random streams and the latency distributions scenarios use.

DESIGN.md principle 2: a run is a pure function of (scenario, seed). Every
random choice is drawn from a named stream whose seed is derived from the run
seed with a stable hash (blake2b, never Python's ``hash()``), so

* the same seed gives the same draws in any process, with any PYTHONHASHSEED;
* streams are independent: adding a consumer (a new stream name) does not
  shift the draws of any other stream.

Distributions sample integer milliseconds (time in sharesim is always an int).
Their float parameters only shape the draw; the result is rounded half-up and
clamped to ``[min_ms, max_ms]``.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Final

from mypy_extensions import mypyc_attr

_SEED_PERSON: Final = b"sharesim-seed"  # blake2b personalisation: our seeds never collide with other blake2b uses


def derive_seed(*parts: str | int) -> int:
    """A 64-bit seed from ``parts`` (e.g. ``derive_seed(run_seed, "consumer", "c3")``).

    The encoding is canonical: each part is tagged with its type and length, so
    ``("ab", "c")`` and ``("a", "bc")`` and ``(1,)`` and ``("1",)`` all differ.
    """
    # One blake2b call over the joined encoding (hot: a poison check per record).
    encoded = []
    for part in parts:
        if isinstance(part, str):
            tag, raw = b"s", part.encode("utf-8")
        elif isinstance(part, int) and not isinstance(part, bool):
            tag, raw = b"i", str(int(part)).encode("ascii")
        else:
            raise TypeError(f"derive_seed part {part!r}: must be a str or an int, not {type(part).__name__}")
        encoded.append(b"%b%d:%b" % (tag, len(raw), raw))
    digest = hashlib.blake2b(b"".join(encoded), digest_size=8, person=_SEED_PERSON).digest()
    return int.from_bytes(digest, "big")


class RandomStreams:
    """Named, independent ``random.Random`` streams derived from one run seed.

    ``streams.get("network")`` and ``streams.get("consumer", "c3")`` return the
    same object on every call, so a stream's draws continue where they left off.
    """

    __slots__ = ("_streams", "seed")

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed {seed!r}: must be an int")
        self.seed = seed
        self._streams: dict[tuple[str | int, ...], random.Random] = {}

    def get(self, *names: str | int) -> random.Random:
        stream = self._streams.get(names)
        if stream is None:
            if not names:
                raise ValueError("a stream needs at least one name")
            stream = random.Random(derive_seed(self.seed, *names))
            self._streams[names] = stream
        return stream

    def child(self, *names: str | int) -> RandomStreams:
        """A separate family of streams (e.g. for the swarm plan generator)."""
        return RandomStreams(derive_seed(self.seed, "child", *names))

    def names(self) -> list[tuple[str | int, ...]]:
        """The streams drawn from so far, sorted (for debugging a divergence)."""
        return sorted(self._streams, key=lambda name: tuple((type(p).__name__, str(p)) for p in name))


# -- distributions -----------------------------------------------------------

DISTRIBUTION_KINDS: Final = ("constant", "uniform", "exponential", "lognormal", "spike")

Sampler = Callable[[random.Random], int]


class DistributionError(ValueError):
    """A distribution parameter is missing or out of range; the message names it."""


def _round_ms(value: float) -> int:
    # Half-up rounding, not round()'s banker's rounding.
    return int(value + 0.5)  # value >= 0, so int() floors


# Interpreted in the compiled build (setup.py): scenarios carry it into Spark's workers, and a
# native frozen class cannot be unpickled; its checks also keep their messages for any input.
@mypyc_attr(native_class=False)
@dataclass(frozen=True)
class Distribution:
    """A delay distribution in integer milliseconds.

    kinds and their parameters:

    * ``constant``: ``value_ms``
    * ``uniform``: ``low_ms`` .. ``high_ms`` inclusive
    * ``exponential``: ``mean_ms`` (plus ``min_ms`` as a floor)
    * ``lognormal``: ``median_ms`` and ``sigma`` (the median of the draw is ``median_ms``)
    * ``spike``: a draw from ``base``; with ``probability`` a draw from ``extra`` is added
      (a delay spike, e.g. a GC pause or a retransmission on the path)

    ``min_ms`` / ``max_ms`` clamp every kind (``max_ms`` None = unbounded).
    """

    kind: str
    value_ms: int = 0
    low_ms: int = 0
    high_ms: int = 0
    # int | float, not float: a number stays as the scenario file wrote it, also in the compiled
    # build (mypyc reads a float attribute as a float: 0 would show as 0.0 in a message).
    mean_ms: int | float = 0.0
    median_ms: int | float = 0.0
    sigma: int | float = 0.0
    probability: int | float = 0.0
    base: Distribution | None = None
    extra: Distribution | None = None
    min_ms: int = 0
    max_ms: int | None = None

    # -- constructors --------------------------------------------------------

    @classmethod
    def constant(cls, value_ms: int) -> Distribution:
        return cls("constant", value_ms=value_ms)

    @classmethod
    def uniform(cls, low_ms: int, high_ms: int) -> Distribution:
        return cls("uniform", low_ms=low_ms, high_ms=high_ms)

    @classmethod
    def exponential(cls, mean_ms: float, *, min_ms: int = 0, max_ms: int | None = None) -> Distribution:
        return cls("exponential", mean_ms=mean_ms, min_ms=min_ms, max_ms=max_ms)

    @classmethod
    def lognormal(cls, median_ms: float, sigma: float, *, min_ms: int = 0, max_ms: int | None = None) -> Distribution:
        return cls("lognormal", median_ms=median_ms, sigma=sigma, min_ms=min_ms, max_ms=max_ms)

    @classmethod
    def spike(cls, base: Distribution, probability: float, extra: Distribution) -> Distribution:
        return cls("spike", base=base, probability=probability, extra=extra)

    # -- validation ----------------------------------------------------------

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem is not None:
            raise DistributionError(f"{self.kind} distribution: {problem}")

    def _problem(self) -> str | None:
        if self.kind not in DISTRIBUTION_KINDS:
            return f"kind = {self.kind!r}: must be one of {', '.join(DISTRIBUTION_KINDS)}"
        for name in ("value_ms", "low_ms", "high_ms", "min_ms"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                return f"{name} = {value!r}: must be an integer >= 0"
        if self.max_ms is not None and (
            isinstance(self.max_ms, bool) or not isinstance(self.max_ms, int) or self.max_ms < self.min_ms
        ):
            return f"max_ms = {self.max_ms!r}: must be None or an integer >= min_ms ({self.min_ms})"
        for name in ("mean_ms", "median_ms", "sigma", "probability"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                return f"{name} = {value!r}: must be a finite number"
        if self.kind == "uniform" and self.high_ms < self.low_ms:
            return f"high_ms = {self.high_ms}: must be >= low_ms ({self.low_ms})"
        if self.kind == "exponential" and self.mean_ms <= 0:
            return f"mean_ms = {self.mean_ms!r}: must be > 0"
        if self.kind == "lognormal":
            if self.median_ms <= 0:
                return f"median_ms = {self.median_ms!r}: must be > 0"
            if not 0 <= self.sigma <= 4:
                return f"sigma = {self.sigma!r}: must be in [0, 4]"
        if self.kind == "spike":
            if not isinstance(self.base, Distribution):
                return f"base = {self.base!r}: must be a Distribution"
            if not isinstance(self.extra, Distribution):
                return f"extra = {self.extra!r}: must be a Distribution"
            if not 0 <= self.probability <= 1:
                return f"probability = {self.probability!r}: must be in [0, 1]"
        return None

    # -- sampling ------------------------------------------------------------

    def sample(self, rng: random.Random) -> int:
        """One draw, an integer number of milliseconds >= 0."""
        return self.sampler()(rng)

    def sampler(self) -> Sampler:
        """A specialised ``rng -> int`` function; hot paths build it once and keep it."""
        return _sampler(self)

    # -- scenario files --------------------------------------------------------

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> Distribution:
        """Build from a scenario file's table, e.g. ``{kind = "lognormal", median_ms = 2, sigma = 0.5}``."""
        if "kind" not in data:
            raise DistributionError(f"distribution {dict(data)!r}: missing 'kind'")
        allowed = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise DistributionError(
                f"{data['kind']} distribution: unknown parameter(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(sorted(allowed))}"
            )
        values = dict(data)
        for nested in ("base", "extra"):
            if isinstance(values.get(nested), Mapping):
                values[nested] = cls.from_mapping(values[nested])
        return cls(**values)

    def to_mapping(self) -> dict[str, Any]:
        """The non-default parameters, in the form ``from_mapping`` reads."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "kind" or value == f.default:
                continue
            out[f.name] = value.to_mapping() if isinstance(value, Distribution) else value
        return out


# -- draws ---------------------------------------------------------------------
#
# ``random.Random``'s normal and exponential draws are pure Python (random.py), so they stay
# interpreted in the compiled build, where they were a few percent of a run. These are the same
# algorithms written out with the same floating-point operations in the same order: they consume
# the same ``random()`` values and return the same floats (tests/model/sim/test_rng.py checks
# them against ``random.Random``), and pin the draws should a later Python change its own.

_NV_MAGICCONST: Final = 4 * math.exp(-0.5) / math.sqrt(2.0)


def normal_draw(rng: random.Random, mu: float, sigma: float) -> float:
    """``rng.normalvariate(mu, sigma)``: Kinderman and Monahan's ratio of uniforms."""
    uniform = rng.random
    while True:
        u1 = uniform()
        u2 = 1.0 - uniform()
        z = _NV_MAGICCONST * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if zz <= -math.log(u2):
            return mu + z * sigma


def lognormal_draw(rng: random.Random, mu: float, sigma: float) -> float:
    """``rng.lognormvariate(mu, sigma)``."""
    return math.exp(normal_draw(rng, mu, sigma))


def exponential_draw(rng: random.Random, rate: float) -> float:
    """``rng.expovariate(rate)``."""
    return -math.log(1.0 - rng.random()) / rate


def _sampler(dist: Distribution) -> Sampler:
    # Module level, not methods: mypyc cannot compile a closure in a method of an interpreted class.
    raw = _raw_sampler(dist)
    lo, hi = dist.min_ms, dist.max_ms
    if lo == 0 and hi is None:
        return raw  # every raw draw is already >= 0

    def clamped(rng: random.Random) -> int:
        value = raw(rng)
        if value < lo:
            return lo
        if hi is not None and value > hi:
            return hi
        return value

    return clamped


def _raw_sampler(dist: Distribution) -> Sampler:
    kind = dist.kind
    if kind == "constant":
        fixed = dist.value_ms
        return lambda rng: fixed
    if kind == "uniform":
        # low + floor(U * span) rather than randint: one C call, and the
        # bias over a span of a few thousand ms is below 2**-40.
        low, span = dist.low_ms, dist.high_ms - dist.low_ms + 1
        return lambda rng: low + int(rng.random() * span)
    if kind == "exponential":
        rate = 1.0 / dist.mean_ms
        return lambda rng: _round_ms(exponential_draw(rng, rate))
    if kind == "lognormal":
        mu, sigma = math.log(dist.median_ms), dist.sigma
        return lambda rng: _round_ms(lognormal_draw(rng, mu, sigma))
    assert dist.base is not None and dist.extra is not None  # checked in __post_init__
    base, extra, probability = dist.base.sampler(), dist.extra.sampler(), dist.probability

    def spiky(rng: random.Random) -> int:
        value = base(rng)
        if rng.random() < probability:
            value += extra(rng)
        return value

    return spiky
