"""Open a report in headless Chromium and count the pictures it shows: the check that a page renders.

``image_check(page)`` copies the page beside itself with a script that, on
``load``, counts the ``<img>`` elements and those that did not decode
(``naturalWidth == 0``) and writes both into the DOM; Chromium's
``--dump-dom`` prints the DOM after the load, and the counts are read back.
Debian's ``chromium`` package provides the browser (``.ci/run`` installs it).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Final, NamedTuple

BROWSERS: Final = ("chromium", "chromium-browser", "google-chrome")
MARKER: Final = "sharesim-image-check"
_SCRIPT: Final = f"""<script>
window.addEventListener("load", function () {{
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (i) {{ return !i.complete || i.naturalWidth === 0; }}).length;
  var marker = document.createElement("div");
  marker.id = "{MARKER}";
  marker.textContent = "images=" + images.length + " broken=" + broken;
  document.body.appendChild(marker);
}});
</script>"""
_RESULT: Final = re.compile(r"images=(\d+) broken=(\d+)")


class BrowserError(RuntimeError):
    """Chromium is missing, failed, or the page never finished loading."""


class ImageCheck(NamedTuple):
    images: int  # <img> elements on the page
    broken: int  # of those, how many did not decode


def find_chromium() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name)) is not None), None)


def image_check(page: Path, timeout_s: float = 60.0) -> ImageCheck:
    """How many images ``page`` has and how many of them Chromium could not show."""
    browser = find_chromium()
    if browser is None:
        raise BrowserError(f"no browser found (looked for {', '.join(BROWSERS)}); apt-get install chromium")
    probe = page.with_name(f".{page.stem}.check.html")
    text = page.read_text(encoding="utf-8")
    probe.write_text(text.replace("</body>", _SCRIPT + "</body>", 1), encoding="utf-8")
    try:
        done = subprocess.run(
            [browser, "--headless", "--disable-gpu", "--no-sandbox", "--virtual-time-budget=10000",
             "--dump-dom", probe.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )
    finally:
        probe.unlink(missing_ok=True)
    found = _RESULT.search(done.stdout)
    if found is None:
        raise BrowserError(f"{browser} did not report on {page} (exit {done.returncode}): {done.stderr[-800:]}")
    return ImageCheck(int(found.group(1)), int(found.group(2)))
