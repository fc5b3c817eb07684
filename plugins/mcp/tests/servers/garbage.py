"""Writes lines that are not JSON-RPC on stdout and never answers."""
import sys
import time

print("Welcome to my server! v1.0", flush=True)
print("listening...", flush=True)
for _ in sys.stdin:
    print("did you say something?", flush=True)
time.sleep(3600)
