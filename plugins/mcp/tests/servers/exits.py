"""Dies at once, saying why on stderr (after that many bytes of log lines, if given one)."""
import sys

if len(sys.argv) > 1:
    line = "debug: still warming up\n"
    sys.stderr.write(line * (int(sys.argv[1]) // len(line)))
print("cannot open the database: permission denied", file=sys.stderr)
sys.exit(3)
