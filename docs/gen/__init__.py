"""Generates the parts of the documentation that the code already says, so that they cannot drift.

Two kinds of output, both committed under ``docs/``:

* In each rule page (``docs/reference/rules/*.md``), the block between
  ``<!-- BEGIN generated: ID -->`` and ``<!-- END generated: ID -->`` after each rule: where the rule is
  implemented (files under ``model/`` that cite its id), checked (invariants whose catalogue ``spec``
  names it, ``invariants/ids.py``), specified (TLA+ definitions whose comments cite it, and the TLC
  models that name it), tested (files under ``tests/`` and ``bench/`` that cite it) and exercised
  (library scenarios that cite it).
* Whole reference pages built from the code's own tables: the command line (every command's
  ``--help``), the broker and group settings
  (``model/core/config.py``), the fault kinds (``model/sim/faults.py``), the invariant catalogue, the
  mutant catalogue (``model/mutants.py``), the exit codes (``scenarios/exits.py``) and the divergences
  from Kafka trunk (``model/kafka_divergences.py``).

Refresh everything with ``python -m docs.gen`` from the repository root; ``python -m docs.gen --check``
exits 1 and names the stale files instead of writing them (``tests/docs/test_generated.py`` runs it).

It lives in ``docs/`` and not in an installed package: like ``bench/`` and ``tla/`` it is a tool run
from a checkout, and what it reads (tests, TLA+, the docs themselves) is not installed either. mkdocs
does not publish it (``exclude_docs`` in ``mkdocs.yml``).

A rule id is ``SP-n``, ``SC-n``, ``GC-n``, ``CG-n``, ``CL-n`` or ``E-n``; a range such as ``SP-3..SP-5``
cites every rule in it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RULES_DIR = DOCS / "reference" / "rules"
FAMILIES = ("SP", "SC", "GC", "CG", "CL", "E")

RULE_ID = re.compile(r"\b(SP|SC|GC|CG|CL|E)-(\d+)\b")
# "SP-3..SP-5" or "SP-3..5": every id in between is cited too.
RULE_RANGE = re.compile(r"\b(SP|SC|GC|CG|CL|E)-(\d+)\s*(?:\.\.|–)\s*(?:(?:SP|SC|GC|CG|CL|E)-)?(\d+)\b")

# Where citations are looked for: the folders of the repository with code, tests, specs or docs, and
# the files in them that can cite a rule.
SCANNED_DIRS = ("model", "invariants", "scenarios", "reports", "tla", "tests", "bench", "docs")
SCANNED_SUFFIXES = (".py", ".tla", ".cfg", ".toml", ".md")
# The generator and its tests cite made-up ids as examples of the pattern.
SKIPPED_DIRS = ("docs/gen/", "tests/docs/")
SKIPPED_PARTS = {"__pycache__", ".venv", "site", "out", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

HEADING = re.compile(r"^## ((SP|SC|GC|CG|CL|E)-(\d+)) (.+?) \{#\1\}\s*$")
BEGIN = "<!-- BEGIN generated: {id} (python -m docs.gen) -->"
END = "<!-- END generated: {id} -->"


def rule_ids_in(text: str) -> set[str]:
    """Every rule id ``text`` cites, ranges expanded."""
    found = {f"{family}-{number}" for family, number in RULE_ID.findall(text)}
    for family, low, high in RULE_RANGE.findall(text):
        found.update(f"{family}-{n}" for n in range(int(low), int(high) + 1))
    return found


def scanned_files(root: Path = ROOT) -> list[Path]:
    """The files that can cite a rule, sorted by their path from ``root``."""
    files: list[Path] = []
    for top in SCANNED_DIRS:
        base = root / top
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            rel = path.relative_to(root)
            if (path.is_file() and path.suffix in SCANNED_SUFFIXES and not SKIPPED_PARTS & set(rel.parts)
                    and not rel.as_posix().startswith(SKIPPED_DIRS)):
                files.append(path)
    readme = root / "README.md"
    if readme.is_file():
        files.append(readme)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


# -- the rules as the docs hold them ------------------------------------------------------------------


@dataclass
class Rule:
    id: str
    title: str
    statement: str  # the text between the heading and the generated block
    page: str  # the page's file name in docs/reference/rules/

    @property
    def family(self) -> str:
        return self.id.split("-")[0]

    @property
    def number(self) -> int:
        return int(self.id.split("-")[1])


def rule_sections(text: str) -> Iterator[tuple[str, str, list[str]]]:
    """(id, title, body lines) of each rule heading of a rule page."""
    current: tuple[str, str] | None = None
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("## ") or line.startswith("# "):
            if current is not None:
                yield current[0], current[1], body
            match = HEADING.match(line)
            current = (match.group(1), match.group(4)) if match else None
            body = []
        elif current is not None:
            body.append(line)
    if current is not None:
        yield current[0], current[1], body


def load_rules(rules_dir: Path = RULES_DIR) -> dict[str, Rule]:
    """Every rule of the rule pages, by id (a duplicate id raises)."""
    rules: dict[str, Rule] = {}
    for page in sorted(rules_dir.glob("*.md")):
        for rule_id, title, body in rule_sections(page.read_text(encoding="utf-8")):
            statement_lines: list[str] = []
            for line in body:
                if line.startswith("<!-- BEGIN generated"):
                    break
                statement_lines.append(line)
            if rule_id in rules:
                raise ValueError(f"{rule_id} is defined twice: {rules[rule_id].page} and {page.name}")
            rules[rule_id] = Rule(rule_id, title.strip(), "\n".join(statement_lines).strip(), page.name)
    return rules


def rule_link(rule_id: str, from_dir: str = "reference") -> str:
    """A Markdown link to a rule from a page in ``docs/<from_dir>/``."""
    page = rule_id.split("-")[0].lower() + ".md"
    prefix = "rules/" if from_dir == "reference" else "../reference/rules/"
    return f"[{rule_id}]({prefix}{page}#{rule_id})"


# -- where each rule is cited ------------------------------------------------------------------------


@dataclass
class Citations:
    implemented: set[str] = field(default_factory=set)  # files under model/
    checked: list[str] = field(default_factory=list)  # invariant ids
    specified: set[tuple[str, str]] = field(default_factory=set)  # ("tla/X.tla", definition)
    models: set[str] = field(default_factory=set)  # tla/models/*.cfg
    tested: set[str] = field(default_factory=set)  # files under tests/ and bench/
    scenarios: set[str] = field(default_factory=set)  # library scenario names


# Catalogues that describe rules without implementing them (each has its own reference page).
NOT_IMPLEMENTATION = {"model/mutants.py", "model/kafka_divergences.py"}
# TLA+ definitions that name rules without specifying them: the list of deliberate bugs.
TLA_NOT_PROTOCOL = {"MutantNames"}

TLA_DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*==")
TLA_SECTION = re.compile(r"^(CONSTANTS?|VARIABLES?)\b")


def tla_citations(text: str) -> dict[str, set[str]]:
    """Rule id → the TLA+ definitions whose comments cite it.

    A block comment right above a definition (no blank line between) belongs to it; a ``\\*`` comment
    belongs to the definition (or the CONSTANTS / VARIABLES declaration) it is written in. The module's
    opening comment, before the first declaration, belongs to nothing."""
    found: dict[str, set[str]] = {}
    pending: set[str] = set()  # ids of the block comment just above
    current: str | None = None  # the definition or declaration being read
    started = False
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            pending = set()
            continue
        if line.startswith("(*"):
            pending |= rule_ids_in(line)
            current = None
            continue
        definition = TLA_DEFINITION.match(line)
        section = TLA_SECTION.match(line)
        if definition or section:
            started = True
            current = definition.group(1) if definition else "CONSTANTS" if line.startswith("CONST") else "VARIABLES"
            for rule_id in pending:
                found.setdefault(rule_id, set()).add(current)
            pending = set()
        elif line.startswith(("EXTENDS", "----", "====")):
            current = None
            pending = set()
        if started and current is not None and "\\*" in line:
            for rule_id in rule_ids_in(line[line.index("\\*"):]):
                found.setdefault(rule_id, set()).add(current)
    return found


def invariant_specs() -> dict[str, tuple[str, ...]]:
    """Invariant id → the rule ids its catalogue entry protects."""
    from invariants.ids import TABLE

    return {invariant: entry.spec for invariant, entry in TABLE.items()}


def collect(root: Path = ROOT) -> dict[str, Citations]:
    """Rule id → where it is cited, for every id cited anywhere."""
    citations: dict[str, Citations] = {}

    def entry(rule_id: str) -> Citations:
        return citations.setdefault(rule_id, Citations())

    for path in scanned_files(root):
        rel = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        ids = rule_ids_in(text)
        top = rel.split("/")[0]
        for rule_id in ids:
            if top == "model" and rel not in NOT_IMPLEMENTATION:
                entry(rule_id).implemented.add(rel)
            elif top in ("tests", "bench"):
                entry(rule_id).tested.add(rel)
            elif rel.startswith("tla/models/"):
                entry(rule_id).models.add(path.stem)
            elif rel.startswith("scenarios/library/") and path.suffix == ".toml":
                entry(rule_id).scenarios.add(path.stem)
            else:
                entry(rule_id)
        if path.suffix == ".tla":
            for rule_id, names in tla_citations(text).items():
                entry(rule_id).specified.update((rel, name) for name in names if name not in TLA_NOT_PROTOCOL)
    for invariant, spec in invariant_specs().items():
        for rule_id in spec:
            entry(rule_id).checked.append(invariant)
    return citations


def cited_ids(root: Path = ROOT) -> dict[str, list[str]]:
    """Rule id → the files (relative paths) that cite it, for every file scanned."""
    where: dict[str, list[str]] = {}
    for path in scanned_files(root):
        for rule_id in rule_ids_in(path.read_text(encoding="utf-8")):
            where.setdefault(rule_id, []).append(path.relative_to(root).as_posix())
    return where


def _codes(items: Iterable[str]) -> str:
    listed = sorted(items)
    return ", ".join(f"`{item}`" for item in listed) if listed else "—"


def generated_block(rule_id: str, cites: Citations) -> str:
    checked = (", ".join(f"[`{inv}`](../invariants.md#{inv})" for inv in cites.checked)
               if cites.checked else "—")
    by_file: dict[str, list[str]] = {}
    for file, name in sorted(cites.specified):
        by_file.setdefault(file, []).append(name)
    specified = "; ".join(f"`{file}`: " + ", ".join(f"`{name}`" for name in names)
                          for file, names in by_file.items()) or "—"
    if cites.models:
        specified = ("" if specified == "—" else specified + "; ") + "TLC models " + _codes(cites.models)
    lines = [
        BEGIN.format(id=rule_id),
        "",
        f"| {rule_id} | where |",
        "| --- | --- |",
        f"| implemented | {_codes(cites.implemented)} |",
        f"| checked | {checked} |",
        f"| specified | {specified} |",
        f"| tested | {_codes(cites.tested)} |",
        f"| scenarios | {_codes(cites.scenarios)} |",
        "",
        END.format(id=rule_id),
    ]
    return "\n".join(lines)


def render_rule_page(text: str, citations: dict[str, Citations]) -> str:
    """The page with each rule's generated block rewritten (or added at the end of the rule)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    current: str | None = None

    def close() -> None:
        if current is None:
            return
        while out and not out[-1].strip():
            out.pop()
        out.extend(["", generated_block(current, citations.get(current, Citations())), ""])

    while i < len(lines):
        line = lines[i]
        if line.startswith("## ") or line.startswith("# "):
            close()
            match = HEADING.match(line)
            current = match.group(1) if match else None
            out.append(line)
        elif line.startswith("<!-- BEGIN generated"):
            while i < len(lines) and not lines[i].startswith("<!-- END generated"):
                i += 1
        else:
            out.append(line)
        i += 1
    close()
    return "\n".join(out).rstrip() + "\n"


# -- reference pages built from the code -------------------------------------------------------------

GENERATED_NOTE = "<!-- Generated by `python -m docs.gen` from {source}: edit the code, not this page. -->\n\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_page() -> str:
    from model.core.config import (
        BROKER_DESCRIPTIONS,
        BROKER_SETTINGS,
        GROUP_DESCRIPTIONS,
        GROUP_SETTINGS,
        KAFKA_TRUNK_COMMIT,
        Setting,
    )

    sources = {"000": "KIP-932 (seed 000)", "003": "KIP-932 (seed 003)", "004": "KIP-848 (seed 004)",
               "kafka": f"Kafka trunk `{KAFKA_TRUNK_COMMIT[:10]}`", "sharesim": "sharesim's own"}

    def table(settings: tuple[Setting, ...], descriptions: dict[str, str]) -> list[str]:
        rows = ["| key | default | allowed | what it does | from |", "| --- | --- | --- | --- | --- |"]
        for s in settings:
            default = "null" if s.default is None else f'"{s.default}"' if isinstance(s.default, str) else str(
                s.default)
            rows.append(f"| `{s.key}` | `{default}` | {_cell(s.allowed())} | {_cell(descriptions[s.key])} | "
                        f"{sources.get(s.source, s.source)} |")
        return rows

    lines = [
        GENERATED_NOTE.format(source="`model/core/config.py`") + "# Broker and group settings",
        "",
        "Every setting a scenario can give, with its default and the values it accepts. Broker settings go in",
        "`[cluster.config]`; group settings in a group's `config` table. A value outside its range is",
        "rejected before the run starts (exit code 2), with the key, the value and what is allowed.",
        "",
        "!!! note \"A share group starts at the latest offset\"",
        "    `group.share.auto.offset.reset` defaults to `latest`, as in Kafka: records produced before the",
        "    group's first fetch are never delivered to it. Set it to `earliest` to read a topic from its",
        "    start (rule [SP-10](rules/sp.md#SP-10)).",
        "",
        "## Broker settings",
        "",
        *table(BROKER_SETTINGS, BROKER_DESCRIPTIONS),
        "",
        "## Group settings",
        "",
        "A group setting left `null` takes the broker's value of the same name.",
        "",
        *table(GROUP_SETTINGS, GROUP_DESCRIPTIONS),
    ]
    return "\n".join(lines) + "\n"


def fault_kinds_page() -> str:
    from model.sim.faults import FAULT_KINDS, HOSTILE_NAMED_ONLY, HOSTILE_STATE_REQUESTS

    lines = [
        GENERATED_NOTE.format(source="`model/sim/faults.py` (`FAULT_KINDS`)") + "# Fault kinds",
        "",
        "A fault plan is a list of timed events; each names its `kind` and the time `at_ms` it starts.",
        "What else an event reads depends on its kind: its `target` (a broker, consumer, group, partition",
        "or topic), a `duration_ms` if the fault lasts (*lasts*: yes), the fields listed under *uses*, and the keys",
        "listed under *params*. Any other field must stay at its default.",
        "",
        "| kind | target | lasts | uses | params | what it does |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for spec in FAULT_KINDS.values():
        lines.append(
            f"| `{spec.name}` | {spec.target or '—'} | {'yes' if spec.durational else 'no'} | "
            f"{_codes(spec.uses)} | {_codes(spec.params)} | {_cell(spec.summary)} |")
    lines += [
        "",
        "`hostile_state_request` sends, when `params.request` is absent, in this order: "
        + ", ".join(f"`{r}`" for r in HOSTILE_STATE_REQUESTS)
        + ". Only when `params.request` names it: " + ", ".join(f"`{r}`" for r in HOSTILE_NAMED_ONLY) + ".",
    ]
    return "\n".join(lines) + "\n"


def invariants_page() -> str:
    from invariants.catalogue import CATALOGUE

    lines = [
        GENERATED_NOTE.format(source="`invariants/ids.py` and `invariants/catalogue.py`") + "# Invariant catalogue",
        "",
        "Every property a run checks, by the id a violation names. *state* invariants are checked after",
        "each step, *transition* invariants on each change, *liveness* properties once faults stop, at the",
        "end of the healing phase. `sharesim invariants` prints the same list.",
        "",
        "An invariant is only as good as where its expectation comes from: one that asks the share",
        "coordinator how many updates it wrote, or replays its log with the coordinator's own `apply`,",
        "agrees with the very defect it should catch. So every invariant takes its expectation from facts",
        "the ghost ledger saw at a boundary (what producers had acknowledged, what clients were handed and",
        "acknowledged, the records a state log committed, what a data log holds), from configuration, or",
        "from a reference written apart from the model (`invariants/state_log_reference.py`, the state",
        "log's semantics as Kafka's `ShareCoordinatorShard` replays them). Each entry says which, as its",
        "*source of truth*; a test fails if one has none, or one that reads the model's bookkeeping.",
        "`sharesim invariants --rules` lists every rule with the invariants that check it, or why none does",
        "([rule coverage](rule-coverage.md)).",
        "",
    ]
    for inv in CATALOGUE:
        lines += [
            f"## `{inv.id}` {{#{inv.id}}}",
            "",
            inv.statement[0].upper() + inv.statement[1:] + ".",
            "",
            f"- kind: {inv.kind}",
            f"- rules: {', '.join(rule_link(r) for r in inv.spec)}",
            f"- source of truth: {inv.source}",
            f"- checked by: `{inv.checker}`",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def mutants_page() -> str:
    from model.mutants import MUTANTS, VARIANTS

    lines = [
        GENERATED_NOTE.format(source="`model/mutants.py`") + "# Mutant catalogue",
        "",
        "A mutant is one realistic defect injected into the model (`--mutant NAME` on `sharesim run`,",
        "`check`, `sweep` and `campaign`), with the invariant expected to catch it and the library scenario",
        "in which it shows. A variant is a candidate fix kept beside the mutant whose behaviour it keeps.",
        "`sharesim mutants` prints the same list.",
        "",
        "## Mutants",
        "",
        "| mutant | caught by | shows in | the defect, and where its hook is |",
        "| --- | --- | --- | --- |",
    ]
    for m in MUTANTS:
        lines.append(f"| `{m.name}` | [`{m.expected_invariant}`](invariants.md#{m.expected_invariant}) | "
                     f"`{m.scenario}` | {_cell(m.description)}<br>hook: `{_cell(m.where)}` |")
    lines += ["", "## Variants", "", "| variant | keeps mutant | the change, and where its hook is |",
              "| --- | --- | --- |"]
    for v in VARIANTS:
        lines.append(f"| `{v.name}` | `{v.base}` | {_cell(v.description)}<br>hook: `{_cell(v.where)}` |")
    return "\n".join(lines) + "\n"


def exit_codes_page() -> str:
    import scenarios.exits

    doc = (scenarios.exits.__doc__ or "").replace("``", "`")
    first, _, rest = doc.partition("\n\n")
    lines = [
        GENERATED_NOTE.format(source="the docstring of `scenarios/exits.py`") + "# Exit codes",
        "",
        first.strip(),
        "",
        rest.strip(),
    ]
    return "\n".join(lines) + "\n"


def divergences_page() -> str:
    from model.core.config import KAFKA_TRUNK_COMMIT
    from model.kafka_divergences import DIVERGENCES

    lines = [
        GENERATED_NOTE.format(source="`model/kafka_divergences.py`") + "# Where sharesim differs from Kafka",
        "",
        f"sharesim follows Apache Kafka trunk at `{KAFKA_TRUNK_COMMIT}` wherever the KIPs leave a choice",
        "(`sharesim.protocol = \"kafka\"`, the default). These are the places where it does not, on",
        "purpose. A *divergence* is a place where Kafka's behaviour breaks a safety property the model",
        "checks (its mutant, where there is one, shows it) or where the model keeps a rule Kafka does not; an",
        "*abstraction* simplifies how Kafka runs without changing anything the invariants judge.",
        "",
    ]
    for d in DIVERGENCES:
        lines += [
            f"## `{d.name}` {{#{d.name}}}",
            "",
            f"*{d.kind}*" + (f"; Kafka's behaviour is the mutant [`{d.mutant}`](mutants.md)" if d.mutant else ""),
            "",
            f"- **sharesim:** {d.sharesim}",
            f"- **Kafka trunk:** {d.kafka}",
            f"- **why:** {d.why}",
            "- **tests:** " + ", ".join(f"`{t}`" for t in d.tests),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def cli_page() -> str:
    import click

    from scenarios.cli import main as sharesim

    # 100 columns: the same text whatever the terminal. The group's own context settings (-h beside --help),
    # as the command line has them: click caches a command's help option the first time it builds it, so a
    # context without them would make the page depend on what ran before in the process.
    root = click.Context(sharesim, info_name="sharesim", terminal_width=100, max_content_width=100,
                         **sharesim.context_settings)
    lines = [
        GENERATED_NOTE.format(source="the `--help` of every `sharesim` command (`scenarios/cli.py`)")
        + "# Command line",
        "",
        "Every `sharesim` command with every option, as its `--help` prints it.",
        "",
        "```text",
        "$ sharesim --help",
        sharesim.get_help(root),
        "```",
        "",
    ]
    for name in sharesim.list_commands(root):
        command = sharesim.get_command(root, name)
        assert command is not None
        context = click.Context(command, info_name=name, parent=root, terminal_width=100, max_content_width=100)
        lines += [f"## `sharesim {name}` {{#{name}}}", "", "```text", f"$ sharesim {name} --help",
                  command.get_help(context), "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def _toml_value(value: object) -> str:
    """A default as a scenario file writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, int | float):
        return f"{value:_}".replace("_", "") if isinstance(value, int) else str(value)
    return str(value)


def _key_type(annotation: str) -> str:
    """A dataclass field's annotation as the type a scenario file gives."""
    kinds = {"int": "integer", "float": "number", "str": "string", "bool": "boolean",
             "Distribution": "distribution", "Mapping[str, Any]": "table", "Mapping[str, float]": "table",
             "tuple[str, ...]": "array of strings", "tuple[tuple[str, str], ...]": "array of [string, string]",
             "Distribution | None": "distribution", "TransactionSpec | None": "table",
             "SwarmSpec | None": "table", "tuple[tuple[str, ParamValue], ...]": "table"}
    if annotation in kinds:
        return kinds[annotation]
    if annotation.startswith("tuple["):
        return "array of tables"
    return "table"


def _key_default(f: object) -> str:
    import dataclasses

    from model.sim.rng import Distribution

    assert isinstance(f, dataclasses.Field)
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if value is None:
        return "absent"
    if isinstance(value, Distribution):
        shown = {k: v for k, v in dataclasses.asdict(value).items() if v not in (None, 0, 0.0) or k == "kind"}
        return "`{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in shown.items()) + " }`"
    if isinstance(value, tuple | list):
        if "ParamValue" in str(f.type):
            return "`{}`"
        if value and all(isinstance(v, str) for v in value) and len(value) > 4:
            return "every kind"
        return "`[" + ", ".join(_toml_value(v) for v in value) + "]`" if value else "`[]`"
    if isinstance(value, dict):
        return "`{}`"
    if dataclasses.is_dataclass(value):
        return "its keys' defaults"
    return f"`{_toml_value(value)}`"


def scenario_keys_page() -> str:
    import dataclasses

    from scenarios.spec import SCENARIO_TABLES

    lines = [
        GENERATED_NOTE.format(source="`scenarios/spec.py` (`SCENARIO_TABLES` and the dataclasses)")
        + "# Scenario keys",
        "",
        "Every key of a scenario file, table by table, with its type, its default, the values validation",
        "allows and what it means. A file's tables and keys are the fields of the dataclasses in",
        "`scenarios/spec.py`, with the same names; every integer time is in milliseconds. A value outside",
        "its bounds is rejected before anything runs (exit code 2), with its key path, the value and what",
        "is allowed. [Write a scenario](../how-to/write-a-scenario.md) shows a complete file.",
        "",
        "A *distribution* is an inline table: `{ kind = \"constant\", value_ms = 2 }`,",
        "`{ kind = \"uniform\", low_ms = 1, high_ms = 9 }`, `{ kind = \"exponential\", mean_ms = 5 }`,",
        "`{ kind = \"lognormal\", median_ms = 3, sigma = 0.6 }`, or",
        "`{ kind = \"spike\", base = {…}, probability = 0.01, extra = {…} }`; `min_ms` / `max_ms` clamp any kind.",
        "",
    ]
    for table, cls, docs in SCENARIO_TABLES:
        anchor = re.sub(r"[^a-z]+", "-", table.lower()).strip("-") or "top-level"
        lines += [f"## `{table}` {{#{anchor}}}" if table.startswith(("[", "consumers", "producers")) else
                  f"## {table} {{#{anchor}}}", "",
                  "| key | type | default | allowed | meaning |", "| --- | --- | --- | --- | --- |"]
        for f in dataclasses.fields(cls):
            bounds, description = docs[f.name]
            lines.append(f"| `{f.name}` | {_key_type(str(f.type))} | {_cell(_key_default(f))} | "
                         f"{_cell(bounds) or '—'} | {_cell(description)} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def scenarios_page() -> str:
    from scenarios import library

    lines = [
        GENERATED_NOTE.format(source="`scenarios/library/*.toml`") + "# The named scenarios",
        "",
        "`sharesim list` shows these; `sharesim describe NAME` prints one as a file to copy and edit (they",
        "live in `scenarios/library/*.toml`). The small ones run on the `small` cluster: 3 brokers, topic",
        "`events` x2, share group `g` of 2 consumers, 400 records at 200/s, short timeouts (3 s session, 2 s",
        "lock, delivery limit 3).",
        "",
        "| name | description | fault kinds |",
        "| --- | --- | --- |",
    ]
    for name in library.names():
        scenario = library.get(name)
        kinds = ", ".join(scenario.fault_kinds) or "-"
        lines.append(f"| `{name}` | {_cell(scenario.description)} | {kinds} |")
    return "\n".join(lines) + "\n"


def campaign_rows_page() -> str:
    from reports.rows import ARROW_SCHEMA, COLUMN_DOCS

    lines = [
        GENERATED_NOTE.format(source="`reports/rows.py` (`ARROW_SCHEMA`, `COLUMN_DOCS`)") + "# Campaign row schema",
        "",
        "One row per run, the same for a campaign (`DIR/runs/batch=*/*.parquet`, written by Spark) and a",
        "sweep (`DIR/runs.parquet`, written by pandas): the Parquet columns, their Arrow types and what",
        "they hold. A run that raised is an error row: verdict `error`, its traceback in `error`, the seed",
        "kept. [Campaign output](campaign-output.md) has the rest of a campaign's directory.",
        "",
        "| column | type | holds |",
        "| --- | --- | --- |",
    ]
    for column in ARROW_SCHEMA:
        lines.append(f"| `{column.name}` | `{column.type}` | {_cell(COLUMN_DOCS[column.name])} |")
    return "\n".join(lines) + "\n"


def situations_page() -> str:
    from model.situations import SITUATIONS

    lines = [
        GENERATED_NOTE.format(source="`model/situations.py`") + "# Situation catalogue",
        "",
        "The protocol situations worth reaching (FoundationDB's code probes, Antithesis's \"sometimes\"",
        "assertions), counted in every run by a one-line hook where each happens. A run's JSON has",
        "`situations` (id → count), a campaign reports each one's hit rate with a 95 % Wilson interval, and",
        "`sharesim situations [--json]` prints this list. *reached by* names the library swarms that reach",
        "it within 100 seeds (`tests/model/test_situations.py` fails when one stops); `python -m bench",
        "situations N [SWARM ...]` measures runs to first hit.",
        "",
    ]
    for sit in SITUATIONS:
        reached = ", ".join(f"`{name}`" for name in sit.swarms) or f"no swarm within 100 seeds: {sit.rare}"
        lines += [
            f"## `{sit.id}` {{#{sit.id}}}",
            "",
            sit.statement[0].upper() + sit.statement[1:] + ".",
            "",
            f"- rules: {', '.join(rule_link(r) for r in sit.rules)}",
            f"- counted in: `{sit.where}`",
            f"- reached by: {reached}",
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def rule_coverage_page() -> str:
    from invariants.rule_coverage import COVERAGE, rule_ids, title_of

    lines = [
        GENERATED_NOTE.format(source="`invariants/rule_coverage.py`") + "# Rule coverage",
        "",
        "Every rule that states a property, and Kafka's documented share-group guarantees (`K-…`), with the",
        "invariants that check it, or the reason none does. `sharesim invariants --rules` prints the same.",
        "",
        "| rule | title | invariants | reason / not covered |",
        "| --- | --- | --- | --- |",
    ]
    for rule in rule_ids():
        cov = COVERAGE[rule]
        name = rule_link(rule) if not rule.startswith("K-") else f"`{rule}`"
        invs = ", ".join(f"[`{i}`](invariants.md#{i})" for i in cov.invariants) or "-"
        lines.append(f"| {name} | {_cell(title_of(rule))} | {invs} | {_cell(cov.reason)} |")
    return "\n".join(lines) + "\n"


REFERENCE_PAGES = {
    "reference/situations.md": situations_page,
    "reference/rule-coverage.md": rule_coverage_page,
    "reference/cli.md": cli_page,
    "reference/settings.md": settings_page,
    "reference/fault-kinds.md": fault_kinds_page,
    "reference/invariants.md": invariants_page,
    "reference/mutants.md": mutants_page,
    "reference/exit-codes.md": exit_codes_page,
    "reference/divergences.md": divergences_page,
    "reference/scenario-keys.md": scenario_keys_page,
    "reference/scenarios.md": scenarios_page,
    "reference/campaign-rows.md": campaign_rows_page,
}


def expected_outputs(root: Path = ROOT) -> dict[Path, str]:
    """Every generated file and the text it should have."""
    outputs: dict[Path, str] = {}
    citations = collect(root)
    for page in sorted((root / "docs" / "reference" / "rules").glob("*.md")):
        outputs[page] = render_rule_page(page.read_text(encoding="utf-8"), citations)
    for rel, build in REFERENCE_PAGES.items():
        outputs[root / "docs" / rel] = build()
    return outputs


def stale(root: Path = ROOT) -> list[Path]:
    """The generated files whose committed text differs from what the generator writes now."""
    return [path for path, text in expected_outputs(root).items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m docs.gen", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1 if any)")
    args = parser.parse_args(argv)
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(ROOT)} (refresh: python -m docs.gen)")
        return 1 if old else 0
    for path, text in expected_outputs().items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0
