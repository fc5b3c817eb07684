"""Logs that many bytes of lines on stderr (the first argument), then serves as ``raw.py`` does.
Run: ``python chatty.py BYTES``."""

import runpy
import sys
from pathlib import Path

line = "debug: cache warmed, listening on stdin\n"
sys.stderr.write(line * (int(sys.argv.pop(1)) // len(line)))
sys.stderr.flush()
runpy.run_path(str(Path(__file__).with_name("raw.py")), run_name="__main__")
