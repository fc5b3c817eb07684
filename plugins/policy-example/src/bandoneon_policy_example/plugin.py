"""The RailwayPolicy plugin class: what it hooks and its options (the package docstring says what it is for)."""

from __future__ import annotations

from typing import ClassVar

from bandoneon_guard import PolicyPack


class RailwayPolicy(PolicyPack):
    """No first-class tickets without a manager's approval; national ID numbers never reach the model."""

    name: ClassVar[str] = "policy-example"
    policy_package: ClassVar[str] = "bandoneon_policy_example"
