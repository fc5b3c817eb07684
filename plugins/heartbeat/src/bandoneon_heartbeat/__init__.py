"""bandoneon-heartbeat: a proactive agent, woken on a timer when it is worth it (level 16)."""

from ._config import HeartbeatConfig, heartbeat_from_config, load_heartbeat_config
from ._heartbeat import Heartbeat, HeartbeatReport, HeartbeatTick, TickOutcome
from .plugin import HeartbeatPlugin

__all__ = [
    "Heartbeat",
    "HeartbeatConfig",
    "HeartbeatPlugin",
    "HeartbeatReport",
    "HeartbeatTick",
    "TickOutcome",
    "heartbeat_from_config",
    "load_heartbeat_config",
]
