"""The consoles of the ``sharesim`` command line, and how its tables are printed.

Every command makes its console here (``make_console``), so one rule holds everywhere:

* Output that is not going to a terminal (a CI log, a pipe, a file) is never hard-wrapped: the console is as
  wide as any line, so a reproducer command copied from a log is the command.
* Plain lines are never wrapped on a terminal either (soft wrap: the terminal folds them on screen, and a
  copy gives one line).
* A table on a terminal fits its width; where its columns cannot fit without breaking a name or squeezing a
  text column to nothing, ``print_table`` prints one record per row instead, so no column is lost at 80
  columns.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from rich.console import Console, ConsoleDimensions, RenderableType
from rich.measure import Measurement
from rich.table import Column, Table

# The width of a console that is not a terminal: wider than any line sharesim prints.
UNWRAPPED_WIDTH: Final = 10_000
# A wrapped text column narrower than this is no longer readable; below it a table becomes records.
MIN_TEXT_WIDTH: Final = 24


class _Console(Console):
    """A rich console that is as wide as any line when its output is not a terminal."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        return size if self.is_terminal else ConsoleDimensions(UNWRAPPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size


def make_console(**options: Any) -> Console:
    """The console of a command (rich ``Console`` options: ``stderr=True`` …): never hard-wrapped when not
    a terminal, and plain lines soft-wrapped."""
    return _Console(soft_wrap=True, **options)


@contextmanager
def human_output_on_stderr(console: Console, when: bool = True) -> Iterator[None]:
    """While inside, ``console`` prints on stderr (when ``when``): stdout is left to a JSON document."""
    before = console.stderr
    console.stderr = before or when
    try:
        yield
    finally:
        console.stderr = before


def print_table(console: Console, table: Table) -> None:
    """``table`` where it fits ``console``'s width, else one record per row (see the module docstring).

    A column with ``no_wrap`` holds names: it needs its widest cell. Any other column wraps at spaces: it
    needs its longest word, and ``MIN_TEXT_WIDTH`` (or its own ``min_width``) if its cells are wider."""
    needed = sum(_needed_width(console, column) + 2 for column in table.columns) + len(table.columns) + 1
    console.print(table if needed <= console.width else records(table))


def _needed_width(console: Console, column: Column) -> int:
    options = console.options
    sizes = [Measurement.get(console, options, cell) for cell in (column.header, *column.cells)]
    widest = max(size.maximum for size in sizes)
    if column.no_wrap:
        return widest
    floor = max(column.min_width or MIN_TEXT_WIDTH, *(size.minimum for size in sizes))
    return min(widest, floor)


def records(table: Table) -> RenderableType:
    """``table`` as records: each row a block of "column  value" lines, the blocks apart by a blank line."""
    grid = Table.grid(padding=(0, 2))
    grid.title = table.title
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    rows = list(zip(*(list(column.cells) for column in table.columns), strict=True))
    for index, row in enumerate(rows):
        for column, cell in zip(table.columns, row, strict=True):
            grid.add_row(column.header, cell)
        if index < len(rows) - 1:
            grid.add_row("", "")
    return grid
