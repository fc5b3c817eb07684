"""bandoneon-sessions: resume a session (level 9 of the Agent Harness Patterns track).

``Sessions`` is the plugin; ``open_session_plugin`` is what ``bandoneon chat --session ID``
calls. The stores (``JsonlStore``, ``SqliteSessionStore``) are usable on their own.
"""

from .plugin import SessionDamaged, Sessions, open_session_plugin
from .records import LoadedSession, SessionError, SessionLocked
from .stores import JsonlStore, SessionStore, SqliteSessionStore, default_sessions_path, open_store

__all__ = [
    "JsonlStore",
    "LoadedSession",
    "SessionDamaged",
    "SessionError",
    "SessionLocked",
    "SessionStore",
    "Sessions",
    "SqliteSessionStore",
    "default_sessions_path",
    "open_session_plugin",
    "open_store",
]
