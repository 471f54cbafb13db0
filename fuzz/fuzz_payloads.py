"""libFuzzer harness for :func:`fuzz.targets.payloads` (atheris, coverage-guided).

Run ``python -m fuzz.run payloads --seconds 60`` (adds seeds cut from
the fixtures), or this file directly with any libFuzzer flags and corpus directories.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz._harness import main

if __name__ == "__main__":
    main("payloads")
