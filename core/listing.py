"""What ``bandoneon plugins`` shows: every installed plugin and what an ``Agent()`` built in this
folder, with this environment, would get from it.

The state is decided by the same rules the agent follows (``bandoneon.toml``, the recommended
defaults, policy packs, the operator's environment variables, the default model), so the
listing cannot drift from what a run does:

- ``active (default)``: a recommended default, or the provider of the default model;
- ``active (bandoneon.toml)``: named under ``[plugins.*]``, or the provider of its ``model``;
- ``policy pack``: active in every agent of the environment;
- ``installed``: available, not active without ``plugins=`` naming it;
- ``disabled (env)``: left out by ``BANDONEON_DISABLED_PLUGINS`` or ``BANDONEON_PLUGINS``;
- ``broken: reason``: its import failed (the agent skips it with a warning).
"""

from __future__ import annotations

import warnings
from typing import Any

import attrs

from .config import Config
from .hooks import Hooks
from .markers import call_style, hookspecs_in
from .plugins import PROJECT, _env_names, installed_plugins, published_hookspecs

__all__ = ["PluginRow", "PublishedHook", "plugin_rows"]


@attrs.frozen
class PublishedHook:
    """A hook the plugin publishes for others to implement, and how it calls them."""

    name: str
    style: str


@attrs.frozen
class PluginRow:
    name: str
    distribution: str
    version: str
    state: str
    hooks: tuple[str, ...]
    import_ms: float | None
    publishes: tuple[PublishedHook, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def implemented_hooks(cls: object) -> tuple[str, ...]:
    """The hooks a plugin (class or module) implements: every attribute carrying the marker,
    by the hook's name (``@hookimpl(specname=...)`` names it when the attribute does not)."""
    names = set()
    for attribute in dir(cls):
        options = getattr(getattr(cls, attribute, None), f"{PROJECT}_impl", None)
        if options is not None:
            names.add(options.get("specname") or attribute)
    return tuple(sorted(names))


def published_hooks(cls: object) -> tuple[PublishedHook, ...]:
    """The hooks a plugin publishes (its ``hookspecs`` module), with their calling style."""
    specs = published_hookspecs(cls)
    if specs is None:
        return ()
    return tuple(PublishedHook(name, call_style(spec).short) for name, spec in hookspecs_in(specs).items())


def model_prefix(config: Config) -> str:
    """The provider prefix an ``Agent()`` without ``model=`` would use here."""
    from .agent import choose_model
    from .errors import ConfigError

    try:
        chosen, _ = choose_model(config, None)
    except ConfigError:  # e.g. a key variable that is not set: no provider is in use yet
        return ""
    return chosen.partition(":")[0] if isinstance(chosen, str) else ""


def _provider_prefixes(cls: object) -> set[str]:
    if not hasattr(getattr(cls, "register_providers", None), f"{PROJECT}_impl"):
        return set()
    prefixes: set[str] = set()
    try:
        Hooks([cls], process_wide=True).register_providers(register=lambda prefix, factory: prefixes.add(prefix))
    except Exception:  # a provider plugin whose registration fails is listed, not fatal here
        return set()
    return prefixes


def plugin_rows(config: Config) -> list[PluginRow]:
    """One row per plugin entry point, sorted by name (imports every enabled plugin)."""
    import importlib.metadata

    enabled = installed_plugins()
    disabled = _env_names("BANDONEON_DISABLED_PLUGINS") or set()
    allowed = _env_names("BANDONEON_PLUGINS")
    configured = set(config.plugins or {})
    prefix = model_prefix(config)
    model_from_config = bool(config.model)
    rows: list[PluginRow] = []
    for entry_point in sorted(importlib.metadata.entry_points(group=PROJECT), key=lambda e: e.name):
        dist = entry_point.dist
        distribution, version = (dist.name, dist.version) if dist else ("?", "?")
        name = entry_point.name
        if name in disabled or (allowed is not None and name not in allowed):
            by = "BANDONEON_DISABLED_PLUGINS" if name in disabled else "BANDONEON_PLUGINS"
            rows.append(PluginRow(name, distribution, version, f"disabled (env: {by})", (), None))
            continue
        entry = enabled[name]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the row says it; a warning on top would say it twice
            cls = entry.load()
        import_ms = (entry.import_seconds or 0) * 1000
        if cls is None:
            rows.append(PluginRow(name, distribution, version, f"broken: {entry.error}", (), import_ms))
            continue
        if getattr(cls, "is_policy_pack", False):
            state = "policy pack"
        elif name in configured:
            state = "active (bandoneon.toml)"
        elif prefix in _provider_prefixes(cls):
            state = "active (bandoneon.toml)" if model_from_config else "active (default)"
        elif getattr(cls, "is_default", False):
            state = "active (default)"
        else:
            state = "installed"
        rows.append(PluginRow(name, distribution, version, state, implemented_hooks(cls), import_ms, published_hooks(cls)))
    return rows


def format_table(rows: list[PluginRow]) -> str:
    """The rows as an aligned table with a header; the hooks last, as they are the longest.

    HOOKS are the hooks a plugin implements; PUBLISHES, the hooks it declares for other plugins
    to implement, each with its calling style."""
    header = ("NAME", "DISTRIBUTION", "VERSION", "STATE", "IMPORT", "PUBLISHES", "HOOKS")
    cells = [header] + [
        (
            r.name, r.distribution, r.version, r.state, "-" if r.import_ms is None else f"{r.import_ms:.1f} ms",
            ", ".join(f"{hook.name} ({hook.style})" for hook in r.publishes) or "-", ", ".join(r.hooks) or "-",
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    lines = ["  ".join([*(row[i].ljust(widths[i]) for i in range(len(widths))), row[-1]]).rstrip() for row in cells]
    active = sum(r.state.startswith(("active", "policy")) for r in rows)
    lines.append(f"{len(rows)} plugin{'s' if len(rows) != 1 else ''} installed, {active} active in an Agent() here")
    return "\n".join(lines)
