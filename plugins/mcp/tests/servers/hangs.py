"""Reads its requests and never answers (a server stuck in initialize)."""
import sys

for _ in sys.stdin:
    pass
