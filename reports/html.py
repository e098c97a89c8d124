"""Self-contained HTML pages: matplotlib figures embedded as base64 PNG, tables, one inline stylesheet.

A page opens from disk with no server and no network: nothing is linked, every
picture is a ``data:`` URI. Run, violation, sweep and campaign reports build
their pages from these pieces.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import matplotlib

matplotlib.use("Agg")  # no display: figures are rendered to PNG bytes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI: Final = 100
STYLE: Final = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
.ok { color: #1a7f37; font-weight: bold; } .bad { color: #cf222e; font-weight: bold; }
.violation { border-left: 4px solid #cf222e; background: #fff5f5; padding: 0.5em 1em; }
code, pre { background: #f6f8fa; padding: 0.1em 0.3em; } pre { padding: 0.6em; overflow-x: auto; }
.note { color: #555; font-size: 0.9em; }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def figure_png(fig: Figure) -> bytes:
    """The figure as PNG bytes; the figure is closed (matplotlib keeps every open one)."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


def png_img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def figure_img(fig: Figure, alt: str) -> str:
    """``<img>`` with the figure embedded; ``alt`` says what it shows."""
    return png_img(figure_png(fig), alt)


def _cell(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return f"<td>{esc('' if value is None else value)}</td>"
    if isinstance(value, int | float):
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        return f'<td class="num">{esc(text)}</td>'
    return f"<td>{esc(value)}</td>"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A table; with every header empty, no header row (a key/value table)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in rows)
    return f"<table>{thead}<tbody>{body}</tbody></table>"


def section(title: str, *parts: str) -> str:
    return f"<h2>{esc(title)}</h2>\n" + "\n".join(parts)


def paragraph(text: str, css: str = "") -> str:
    klass = f' class="{css}"' if css else ""
    return f"<p{klass}>{esc(text)}</p>"


def page(title: str, *parts: str) -> str:
    """A whole HTML document."""
    body = "\n".join(parts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
            f"<style>{STYLE}</style></head>\n<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n")
