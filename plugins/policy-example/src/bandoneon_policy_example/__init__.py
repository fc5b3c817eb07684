"""bandoneon-policy-example: level 6's railway rules, binding every agent of the environment.

The rules live in ``policy.toml`` beside this file; the enforcement is bandoneon-guard's.
"""

from __future__ import annotations

from typing import ClassVar

from bandoneon_guard import PolicyPack

__all__ = ["RailwayPolicy"]


class RailwayPolicy(PolicyPack):
    """No first-class tickets without a manager's approval; national ID numbers never reach the model."""

    name: ClassVar[str] = "policy-example"
    policy_package: ClassVar[str] = "bandoneon_policy_example"
