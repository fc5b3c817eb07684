"""``bandoneon policy show``: the merged effective policy of the installed packs, as TOML."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import bandoneon

from .policy import load_policy, merge_policies

__all__ = ["add_policy_command", "show_policy"]


def add_policy_command(subparsers: Any) -> None:
    policy = subparsers.add_parser("policy", help="the policy packs in force and their merged rules")
    commands = policy.add_subparsers(dest="policy_command")
    show = commands.add_parser("show", help="print the merged effective policy (TOML) and where each rule came from")
    show.add_argument("--file", action="append", default=[], metavar="TOML", help="also merge this guard rule file (repeatable)")
    show.set_defaults(handler=show_policy)
    policy.set_defaults(handler=lambda args: _usage(policy))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def show_policy(args: argparse.Namespace) -> int:
    """Print the merged policy; exit 2 with the file and rule named when one is broken."""
    import tomli_w

    from .packs import installed_pack_policies

    try:
        policies, opaque = installed_pack_policies()
        policies += [load_policy(path) for path in getattr(args, "file", [])]
    except bandoneon.ConfigError as exc:
        print(f"bandoneon policy show: {exc}", file=sys.stderr)
        return 2
    merged = merge_policies(policies)
    header = "# The effective policy: every rule below applies to every agent of this environment.\n"
    if not policies:
        header += "# No policy pack is installed.\n"
    if opaque:
        header += f"# Policy packs without a readable rule file (enforced by their own code): {', '.join(opaque)}\n"
    sys.stdout.write(header + tomli_w.dumps(merged.as_document()))
    return 0
