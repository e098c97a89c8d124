"""The browser check itself: it counts the pictures and catches one that does not show."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from reports import html
from reports.browser import find_chromium, image_check


@pytest.fixture(autouse=True)
def _chromium() -> None:
    if find_chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed on CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium)")


def test_a_page_with_good_and_broken_pictures(tmp_path: Path) -> None:
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    good = html.figure_img(fig, "a line")
    broken = '<img alt="truncated" src="data:image/png;base64,iVBORw0KGgo=">'
    page = tmp_path / "page.html"
    page.write_text(html.page("two pictures", good, good))
    assert tuple(image_check(page)) == (2, 0)
    page.write_text(html.page("three pictures, one broken", good, broken, good))
    assert tuple(image_check(page)) == (3, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html"]  # the probe copy is gone
