"""The fixtures of the report tests: does a page embed its pictures, and does Chromium show them all; a Spark
session for the aggregation tests."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reports.browser import find_chromium, image_check
from scenarios.campaign import spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def embedded_pngs(page: Path) -> list[bytes]:
    """The PNG pictures a page embeds, decoded."""
    return [base64.b64decode(data) for data in re.findall(r'src="data:image/png;base64,([^"]+)"', page.read_text())]


@pytest.fixture
def assert_renders() -> Callable[[Path, int], None]:
    """``assert_renders(page, images)``: the page embeds ``images`` PNGs, links nothing, and headless
    Chromium shows every one. Without Chromium: skip, unless on CI (``CI`` set), where it fails."""

    def check(page: Path, images: int) -> None:
        text = page.read_text(encoding="utf-8")
        pngs = embedded_pngs(page)
        assert len(pngs) == images and all(p.startswith(PNG_MAGIC) for p in pngs)
        assert not re.search(r'(src|href)="(?!data:)', text), "a report must not link anything"
        if find_chromium() is None:
            if os.environ.get("CI"):
                pytest.fail("chromium is not installed on CI (.ci/run installs it)")
            pytest.skip("chromium is not installed (apt-get install chromium); CI fails instead of skipping")
        shown = image_check(page)
        assert shown.images == images and shown.broken == 0, shown

    return check


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    """A local Spark session, one per test module that asks for it (Spark starts only for those)."""
    session = spark_session("local[1]", app_name="sharesim report tests")
    yield session
    session.stop()
