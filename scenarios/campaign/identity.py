"""What a campaign is, written to ``DIR/campaign.json`` before its first run, and what ``--resume`` compares.

A campaign's rows are a pure function of (scenario content, mutant, campaign seed, run id) and of the
code that computes a row. ``--resume`` may only add rows of the same function, so it compares:

* ``scenario_sha256``: a hash of the scenario's canonical form (``toml_format.dumps``: fields in
  declaration order, tables sorted by key, defaults left out), not of its path: a library name and a
  file with the same content hash the same, and a file edited between two attempts does not;
* ``mutant`` and ``campaign_seed``;
* ``code_fingerprint``: a hash of the sources that determine a row (``FINGERPRINTED``). It reads the
  ``.py`` files, which a compiled install keeps beside its extension modules (setuptools copies every
  package's sources; mypyc compiles them), so both builds of the same code have the same fingerprint,
  as they give the same rows (``tests/test_setup.py``). The sharesim version is recorded too, for the
  reader, but not compared: a fingerprint says more than a version number of a checkout.

The planned runs (``runs``) may grow on a resume, never shrink.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

from scenarios.spec import Scenario

META: Final = "campaign.json"
# Compared on --resume, in this order (one line per difference).
COMPARED: Final = ("scenario_sha256", "mutant", "campaign_seed", "code_fingerprint")
# The sources a row depends on, relative to the directory holding the packages: the model and its
# invariants, how a scenario is read and validated, the row's schema, and the campaign's plan and worker.
FINGERPRINTED: Final = ("model", "invariants", "scenarios/spec.py", "scenarios/toml_format.py", "reports/rows.py",
                        "scenarios/campaign/plan.py", "scenarios/campaign/worker.py")


class CampaignMismatch(Exception):
    """``--resume`` refused: each line of ``lines`` is one reason."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def scenario_sha256(scenario: Scenario) -> str:
    from scenarios.toml_format import dumps

    return hashlib.sha256(dumps(scenario).encode()).hexdigest()


def _sources() -> Iterator[tuple[str, bytes]]:
    """(relative path, bytes) of every ``FINGERPRINTED`` source, found through the import system, so it works
    from a checkout, an installed package and a zip shipped to executors with ``--py-files`` alike."""
    for name in FINGERPRINTED:
        package, _, module = name.partition("/")
        node = files(package)
        for part in module.split("/") if module else ():
            node = node / part
        yield from _walk(node, name)


def _walk(node: Traversable, relative: str) -> Iterator[tuple[str, bytes]]:
    if node.is_dir():
        for child in node.iterdir():
            if child.is_dir() or child.name.endswith(".py"):
                yield from _walk(child, f"{relative}/{child.name}")
    else:
        yield relative, node.read_bytes()


@cache
def code_fingerprint() -> str:
    """sha256 over the sorted relative paths and bytes of the ``FINGERPRINTED`` sources."""
    digest = hashlib.sha256()
    for relative, data in sorted(_sources()):
        name = relative.encode()
        digest.update(b"%d:%s%d:" % (len(name), name, len(data)))
        digest.update(data)
    return digest.hexdigest()


def sharesim_version() -> str:
    try:
        return metadata.version("sharesim")
    except metadata.PackageNotFoundError:
        return "unknown"


def identity_of(scenario: Scenario, scenario_ref: str, campaign_seed: int | None, mutant: str | None,
                campaign_id: str) -> dict[str, Any]:
    """campaign.json's identity fields (without ``runs`` and ``attempts``)."""
    from scenarios.toml_format import dumps

    return {"campaign_id": campaign_id, "scenario": scenario_ref, "scenario_name": scenario.name,
            "scenario_sha256": scenario_sha256(scenario), "mutant": mutant, "campaign_seed": campaign_seed,
            "sharesim_version": sharesim_version(), "code_fingerprint": code_fingerprint(),
            # the resolved scenario itself, so a refused resume can say what changed, not only that it did
            "scenario_toml": dumps(scenario)}


def read_meta(out: Path) -> dict[str, Any] | None:
    path = out / META
    if not path.exists():
        return None
    meta: dict[str, Any] = json.loads(path.read_text())
    return meta


def write_meta(out: Path, meta: dict[str, Any]) -> None:
    """Replaced whole (a temporary file renamed over it): a kill never leaves half a campaign.json."""
    temporary = out / f".{META}.tmp"
    temporary.write_text(json.dumps(meta, indent=2) + "\n")
    os.replace(temporary, out / META)


def _shown(value: Any) -> str:
    return "none" if value is None else str(value)


def _first_change(before: object, now: str) -> str:
    """``; first change: LINE -> LINE`` between the campaign's resolved scenario and this one (none when the
    campaign.json predates ``scenario_toml``)."""
    if not isinstance(before, str):
        return ""
    old, new = before.splitlines(), now.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag != "equal":
            was = "; ".join(old[i1:i2][:2]) or "(nothing)"
            is_now = "; ".join(new[j1:j2][:2]) or "(nothing)"
            return f"; first change: {was!r} -> {is_now!r}"
    return ""


def check_resume(out: Path, identity: dict[str, Any], runs: int, *, has_runs: bool) -> dict[str, Any]:
    """The campaign.json of a resumed campaign (planned runs grown if ``runs`` is more); refuses with one
    line per reason a different campaign, a smaller ``runs``, or nothing to resume."""
    meta = read_meta(out)
    if meta is None:
        if has_runs:
            raise CampaignMismatch([f"--resume: {out} holds runs but no {META} (written by an older sharesim?): "
                                    "its campaign cannot be checked; choose a new --out"])
        raise CampaignMismatch([f"--resume: nothing to resume in {out} (no {META}): run without --resume"])
    lines = [f"--resume: {key} differs: campaign has {_shown(meta.get(key))}, now {_shown(identity[key])}"
             + (_first_change(meta.get("scenario_toml"), identity["scenario_toml"]) if key == "scenario_sha256" else "")
             for key in COMPARED if meta.get(key) != identity[key]]
    planned = int(meta.get("runs", 0))
    if runs < planned:
        lines.append(f"--resume: --runs {runs} is fewer than the {planned} runs the campaign planned: "
                     f"pass --runs {planned} or more")
    if lines:
        raise CampaignMismatch(lines)
    return {**meta, **identity, "runs": max(runs, planned)}
