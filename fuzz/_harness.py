"""Shared ``main`` of the ``fuzz_<target>.py`` scripts: instrument segtools, hand the target
to libFuzzer. Every libFuzzer flag works (``-max_total_time=60``, ``-runs=N``, corpus dirs)."""

from __future__ import annotations

import sys
from pathlib import Path


def main(name: str) -> None:
    import atheris

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    with atheris.instrument_imports(include=["segtools"]):
        from fuzz import targets

        if name == "cli_dump":
            import segtools.cli.main  # noqa: F401
    atheris.Setup(sys.argv, targets.TARGETS[name])
    atheris.Fuzz()
