"""bandoneon-policy-example: level 6's railway rules, binding every agent of the environment.

The rules live in ``policy.toml`` beside this file; the enforcement is bandoneon-guard's.
"""

from .plugin import RailwayPolicy

__all__ = ["RailwayPolicy"]
