"""bandoneon-template: copy this folder to start a plugin (see plugins/README.md)."""

from .plugin import Template

__all__ = ["Template"]
