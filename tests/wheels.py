"""Building sharesim's wheel as ``pip wheel .`` builds it (setup.py), for the tests of the build.

Without build isolation: the test environment has the build's requirements (pyproject.toml's ``test``
extra), and a test must not download mypy. pip builds in the checkout's ``build/`` directory, as it
does for a user; the ``compiled_wheel`` fixture (``tests/conftest.py``) builds the compiled wheel once
per test run, as it takes minutes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTENSIONS = (".so", ".pyd")


@dataclass(frozen=True)
class Built:
    returncode: int
    output: str  # pip's, with the build's own (-v)
    wheel: Path | None

    def names(self) -> list[str]:
        assert self.wheel is not None, self.output[-3000:]
        with zipfile.ZipFile(self.wheel) as archive:
            return archive.namelist()

    def extensions(self) -> list[str]:
        return [name for name in self.names() if name.endswith(EXTENSIONS)]

    def lines(self, prefix: str = "sharesim: ") -> list[str]:
        """The lines setup.py said (pip indents the build's output)."""
        return [line.strip() for line in self.output.splitlines() if line.strip().startswith(prefix)]

    def to_json(self) -> str:
        return json.dumps({"returncode": self.returncode, "output": self.output,
                           "wheel": None if self.wheel is None else str(self.wheel)})

    @classmethod
    def from_json(cls, text: str) -> Built:
        data = json.loads(text)
        return cls(data["returncode"], data["output"], None if data["wheel"] is None else Path(data["wheel"]))

    def unpacked(self, where: Path) -> Path:
        """The wheel's files in ``where``: an installed package, for ``PYTHONPATH``."""
        assert self.wheel is not None, self.output[-3000:]
        with zipfile.ZipFile(self.wheel) as archive:
            archive.extractall(where)
        return where


def build_wheel(out: Path, source: Path = ROOT, **env: str) -> Built:
    """``pip wheel`` of ``source`` into ``out`` with ``env`` set (``SHARESIM_COMPILE`` unset unless given)."""
    environment = {key: value for key, value in os.environ.items() if key != "SHARESIM_COMPILE"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", str(out), str(source)],
        env={**environment, **env}, capture_output=True, text=True, timeout=1800, check=False)
    wheels = sorted(out.glob("sharesim-*.whl"))
    return Built(done.returncode, done.stdout + done.stderr, wheels[0] if len(wheels) == 1 else None)
