"""One section's raw figures, measured in this new process and printed as one JSON line.

    python benchmarks/measure.py loop '{"iterations": 1000, ...}'

``run.py`` starts this once per process a section is measured in (``Scale.processes``) and
takes the median of each figure across them; it is not meant to be run by hand.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BANDONEON_DISABLED_PLUGINS", "policy-example")

import sections  # noqa: E402  (benchmarks/ is not a package)

MEASURES = {"loop": sections.loop_figures, "http": sections.http_figures, "creation": sections.creation_figures}


def main(argv: list[str]) -> int:
    name, scale = argv
    figures = MEASURES[name](sections.Scale(**json.loads(scale)))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
