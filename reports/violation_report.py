"""The violation report: the broken invariant in words and a swimlane diagram of the events before it.

The diagram reads the run's trace (``model/sim/trace.py``): the last
``LAST_EVENTS`` events up to the first ``violation`` event, one row each, top
to bottom in the order they happened, leaving out the producers' traffic (a
steady stream of Produce round trips that would fill the window). Each node has
a lane (consumers, the admin client, brokers, the controller, the fault injector); a
broker that hosts a coordinator gets one more lane per role, so a message to or
from its group coordinator or share coordinator lands on that lane:

* a message delivery (``deliver``) is an arrow from its sender's lane to its
  receiver's lane at the row where it arrived (the trace records arrivals, not
  sends); a drop is a dashed red arrow ending in a cross;
* any other event (an acquisition, a coordinator write, a fault, a leader
  election) is a dot on its node's lane with its kind.

The trace records sender and receiver of every message already, so no trace
event was enriched for this.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from model.sim.trace import TraceEvent, read_ndjson
from reports import html
from reports.checked import find

if TYPE_CHECKING:
    from matplotlib.axes import Axes

LAST_EVENTS: Final = 60
# APIs served by the share coordinator (SC-) and by the group coordinator (GC-, CG-).
SHARE_COORDINATOR_APIS: Final = frozenset({"ReadShareGroupState", "WriteShareGroupState", "InitializeShareGroupState",
                                           "DeleteShareGroupState", "ReadShareGroupStateSummary"})
GROUP_COORDINATOR_APIS: Final = frozenset({
    "ShareGroupHeartbeat", "ConsumerGroupHeartbeat", "OffsetCommit", "OffsetFetch", "ShareGroupDescribe",
    "ConsumerGroupDescribe", "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets",
    "DeleteGroups", "DeleteShareGroups", "ListGroups",
})
# Share-state APIs the group coordinator (not a share-partition leader) sends (GC-7).
SENT_BY_GROUP_COORDINATOR: Final = frozenset({"InitializeShareGroupState", "DeleteShareGroupState",
                                              "ReadShareGroupStateSummary"})
GROUP_COORDINATOR: Final = "group coord"
SHARE_COORDINATOR: Final = "share coord"
_LANE_ORDER: Final = ("c", "p", "admin", "b", "controller", "faults", "cluster")


def is_producer_traffic(event: TraceEvent) -> bool:
    """A producer's own event or a message to or from one: steady background to a share-group violation."""
    return _is_producer(event.node) or _is_producer(str(event.fields.get("src", "")))


def _is_producer(node: str) -> bool:
    return node[:1] == "p" and node[1:].isdigit()


def last_events(events: list[TraceEvent], count: int = LAST_EVENTS,
                skip: Callable[[TraceEvent], bool] = is_producer_traffic) -> list[TraceEvent]:
    """The last ``count`` events not ``skip``ped up to and including the first violation (the trace's end
    if there is none)."""
    end = next((i + 1 for i, e in enumerate(events) if e.kind == "violation"), len(events))
    kept: list[TraceEvent] = []
    for event in reversed(events[:end]):
        if len(kept) == count:
            break
        if event.kind == "violation" or not skip(event):
            kept.append(event)
    return kept[::-1]


def _role(api: str, is_response: bool, at_sender: bool) -> str | None:
    """Which coordinator role of a broker an end of a message of ``api`` is (None: the broker itself)."""
    serving_end = at_sender == is_response  # a request's receiver, or a response's sender
    if api in SHARE_COORDINATOR_APIS:
        if serving_end:
            return SHARE_COORDINATOR
        return GROUP_COORDINATOR if api in SENT_BY_GROUP_COORDINATOR else None
    if api in GROUP_COORDINATOR_APIS and serving_end:
        return GROUP_COORDINATOR
    return None


def _lane(node: str, role: str | None) -> str:
    return f"{node} {role}" if role and node.startswith("b") else node


def message_lanes(event: TraceEvent) -> tuple[str, str]:
    """(sender lane, receiver lane) of a ``deliver`` or ``drop`` event."""
    kind = str(event.fields.get("msg_kind", ""))
    is_response = kind.endswith("Response")
    api = kind.removesuffix("Response")
    src = str(event.fields.get("src", "?"))
    return _lane(src, _role(api, is_response, True)), _lane(event.node, _role(api, is_response, False))


def event_lane(event: TraceEvent) -> str:
    if event.kind.startswith("coordinator.") and event.fields.get("topic") == "__consumer_offsets":
        return _lane(event.node, GROUP_COORDINATOR)
    if event.kind.startswith("coordinator."):
        return _lane(event.node, SHARE_COORDINATOR)
    return event.node


def _lane_key(lane: str) -> tuple[int, str, int, str]:
    node, _, role = lane.partition(" ")
    head = node.rstrip("0123456789")
    number = int(node[len(head):]) if node[len(head):] else 0
    rank = next((i for i, prefix in enumerate(_LANE_ORDER) if head == prefix or node == prefix), len(_LANE_ORDER))
    return rank, head, number, role


def _describe(event: TraceEvent, limit: int = 42) -> str:
    fields = ", ".join(f"{k}={v}" for k, v in event.fields.items() if k not in ("src", "id", "msg_kind"))
    text = f"{event.kind} {fields}".strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def swimlane_figure(events: list[TraceEvent], violation: dict[str, Any] | None = None) -> Any:
    """The matplotlib figure of ``events`` as a sequence diagram (see the module docstring)."""
    import matplotlib.pyplot as plt

    lanes: set[str] = set()
    for event in events:
        if event.kind in ("deliver", "drop"):
            lanes.update(message_lanes(event))
        elif event.kind != "violation":
            lanes.add(event_lane(event))
    order = sorted(lanes, key=_lane_key)
    x = {lane: i for i, lane in enumerate(order)}
    rows = len(events)
    fig, ax = plt.subplots(figsize=(max(9.0, 1.45 * len(order) + 2.5), 0.3 * rows + 1.6))
    for i in x.values():
        ax.axvline(i, color="#bbbbbb", lw=1, zorder=0)
    for row, event in enumerate(events):
        _draw_event(ax, row, event, x, len(order))
    ax.set_xlim(-0.7, max(0, len(order) - 1) + 1.9)  # room for the labels of the last lane
    ax.set_ylim(rows - 0.4, -1.2)
    ax.set_xticks(range(len(order)), order, fontsize=9)
    ax.xaxis.tick_top()
    ax.set_yticks(range(rows), [f"{e.time_ms} ms" for e in events], fontsize=7)
    ax.tick_params(axis="y", length=0)
    for side in ("right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    if violation is not None:
        ax.set_title(f"the last {rows} events before {violation['invariant']} was violated at "
                     f"{violation['time_ms']} ms", fontsize=10, pad=28)
    fig.tight_layout()
    return fig


def _draw_event(ax: Axes, row: int, event: TraceEvent, x: dict[str, int], lane_count: int) -> None:
    if event.kind == "violation":
        ax.axhspan(row - 0.45, row + 0.45, color="#cf222e", alpha=0.15, lw=0)
        ax.text((lane_count - 1) / 2, row, f"VIOLATION: {event.fields.get('invariant', '?')}", ha="center",
                va="center", color="#cf222e", fontsize=9, fontweight="bold")
        return
    if event.kind in ("deliver", "drop"):
        src, dst = message_lanes(event)
        dropped = event.kind == "drop"
        colour = "#cf222e" if dropped else "#1f4e79"
        label = str(event.fields.get("msg_kind", ""))
        if dropped:
            label += f" (dropped: {event.fields.get('reason', '?')})"
        elif event.fields.get("dup"):
            label += " (duplicate)"
        if src == dst:
            ax.plot([x[src]], [row], marker="o", color=colour, ms=4)
            ax.text(x[src] + 0.08, row, label, fontsize=6.5, va="center", color=colour)
            return
        ax.annotate("", xy=(x[dst], row), xytext=(x[src], row),
                    arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 1.1,
                                "ls": "--" if dropped else "-", "shrinkA": 2, "shrinkB": 2})
        if dropped:
            ax.plot([x[dst]], [row], marker="x", color=colour, ms=7, mew=2)
        ax.text((x[src] + x[dst]) / 2, row - 0.12, label, fontsize=6.5, ha="center", va="bottom", color=colour)
        return
    lane = event_lane(event)
    colour = "#e76f51" if event.kind.startswith(("fault", "heal", "broker.")) else "#2a9d8f"
    ax.plot([x[lane]], [row], marker="o", color=colour, ms=5)
    ax.text(x[lane] + 0.08, row, _describe(event), fontsize=6.5, va="center", color="#333333")


def violation_section(result: dict[str, Any], trace_file: Path, count: int = LAST_EVENTS) -> str:
    """The violated invariant in words and, with the trace, the swimlane of the events before it."""
    violations = result.get("violations", [])
    first = violations[0]
    entry = find(first["invariant"])
    if entry is None:
        said = f"<b>{html.esc(first['invariant'])}</b> (no catalogue entry names this invariant)"
    else:
        rule = f" (SPEC {html.esc(entry.spec)})" if entry.spec and entry.spec != entry.id else ""
        said = f"<b>{html.esc(entry.id)}</b>{rule}: {html.esc(entry.statement)}"
    command = result.get("command", f"sharesim run {result.get('scenario')} --seed {result.get('seed')}")
    state = json.dumps(first.get("state", {}), indent=2, sort_keys=True, default=str)
    parts = [
        '<div class="violation">',
        f"<p>Violated: {said}</p>",
        f"<p>At {html.esc(first['time_ms'])} ms (seed {html.esc(first.get('seed', result.get('seed')))})"
        f"{', on a ' + html.esc(first['event']) if first.get('event') else ''}: {html.esc(first['message'])}</p>",
        f"<p>State excerpt:</p><pre>{html.esc(state)}</pre>",
        f"<p>Reproduce: <code>{html.esc(command)}</code></p>",
        "</div>",
    ]
    if len(violations) > 1:
        parts.append(html.table(("invariant", "time ms", "message"),
                                [(v["invariant"], v["time_ms"], v["message"]) for v in violations]))
    if not trace_file.is_file():
        parts.append(html.paragraph(f"No trace in {trace_file.name}: the swimlane needs the run's trace.", "note"))
        return html.section("Violation", *parts)
    events = last_events(read_ndjson(trace_file), count)
    parts.append(html.paragraph(
        f"The last {len(events)} events of the run up to the violation, in order, from {trace_file.name} "
        "(without the producers' traffic, which would crowd out the share group's). "
        "Arrows: messages, drawn where they arrived; dashed red with a cross: dropped; dots: other events. "
        "A broker's coordinator roles have lanes of their own.", "note"))
    parts.append(html.figure_img(swimlane_figure(events, first), "swimlane diagram of the events before the "
                                                                  "violation"))
    parts.append(html.table(("time ms", "node", "event", "fields"),
                            [(e.time_ms, e.node, e.kind, json.dumps(e.fields, sort_keys=True)) for e in events]))
    return html.section("Violation", *parts)
