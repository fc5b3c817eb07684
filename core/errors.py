"""One exception hierarchy for everything bandoneon raises.

Messages say what happened, where, and what to do. Errors the *model* can fix never
become exceptions: they are tool results. These are for the code that runs the agent.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthError",
    "BadRequest",
    "BadResponse",
    "BandoneonError",
    "ConfigError",
    "ContextTooLong",
    "NetworkError",
    "NoAnswer",
    "PluginError",
    "ProviderError",
    "RateLimited",
    "RunInProgress",
    "ServerError",
    "StreamInterrupted",
    "ToolError",
]


class BandoneonError(Exception):
    """Base class of every error bandoneon raises."""


class ConfigError(BandoneonError, ValueError):
    """Configuration is wrong: a bad option, a typo in ``bandoneon.toml``, an unknown model."""


class PluginError(BandoneonError):
    """A plugin failed: it could not be activated, or one of its hooks raised.

    ``plugin`` names the plugin and ``hook`` the hook (when one was running).
    """

    def __init__(self, message: str, *, plugin: str | None = None, hook: str | None = None):
        super().__init__(message)
        self.plugin = plugin
        self.hook = hook


class RunInProgress(BandoneonError, RuntimeError):
    """A second run was started on an agent that is already running one."""


class ToolError(BandoneonError):
    """Raise inside a tool to send the model a message written for it.

    The message becomes an error tool result, as is, so write it for the model:
    what was wrong and what to do instead.
    """


class NoAnswer(BandoneonError):
    """``RunResult.unwrap()`` found no answer: the run ended on a limit or an error."""

    def __init__(self, stop: str, detail: str = ""):
        self.stop = stop
        self.detail = detail
        super().__init__(f"the run ended without an answer (stop={stop!r})" + (f": {detail}" if detail else ""))


class ProviderError(BandoneonError):
    """The model's server failed. ``retryable`` says whether calling again may help."""

    retryable: bool = False

    def __init__(self, message: str, *, status: int | None = None, provider: str | None = None):
        super().__init__(message)
        self.status = status
        self.provider = provider


class RateLimited(ProviderError):
    """HTTP 429. ``retry_after`` is the server's requested wait in seconds, when it sent one."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(ProviderError):
    """HTTP 5xx (including Anthropic's 529 overloaded): the server's trouble, may pass by itself."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class NetworkError(ProviderError):
    """The server could not be reached, the connection dropped, or the request timed out."""

    retryable = True


class AuthError(ProviderError):
    """HTTP 401/403: the key is missing, wrong or not allowed. Retrying will not help."""


class BadRequest(ProviderError):
    """HTTP 400/404/422: the request itself is wrong. Retrying sends the same mistake."""


class ContextTooLong(BadRequest):
    """The request is longer than the model's context window, as the server said.

    ``window`` is the window in tokens where the server's error names it, else None. When no
    window was known, the loop learns this one and shrinks the history to it once.
    """

    def __init__(self, message: str, *, window: int | None = None, **kwargs: Any):
        super().__init__(message, **kwargs)
        self.window = window


class BadResponse(ProviderError):
    """The server answered 2xx with something that is not a usable reply (not JSON, no choices)."""


class StreamInterrupted(ProviderError):
    """A streamed reply broke after part of it was delivered.

    Not retried automatically: the caller has already seen the partial text, and replaying
    the request silently would show it twice. ``partial_text`` holds what arrived.
    """

    def __init__(self, message: str, *, partial_text: str = "", **kwargs: Any):
        super().__init__(message, **kwargs)
        self.partial_text = partial_text
