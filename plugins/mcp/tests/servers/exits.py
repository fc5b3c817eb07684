"""Dies at once, saying why on stderr."""
import sys

print("cannot open the database: permission denied", file=sys.stderr)
sys.exit(3)
