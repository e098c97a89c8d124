"""sharesim: reports. ``render(DIR)`` writes the HTML report of a run, sweep or campaign directory."""

from reports.render import render

__all__ = ["render"]
