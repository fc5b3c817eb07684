"""bandoneon: an async agent harness built from plugins.

Everything a user or a plugin author needs is importable from here; the submodules are
private. See the README for the tour and ``bandoneon.hookspecs`` for every hook.
"""

from typing import TYPE_CHECKING

from .agent import Agent
from .config import Config, load_config
from .context import RunContext
from .decisions import Compacted, FinalAnswer, Refuse, Respond, Retry, SendBack, Stop
from .errors import (
    AuthError,
    BadRequest,
    BadResponse,
    BandoneonError,
    ConfigError,
    ContextTooLong,
    NetworkError,
    NoAnswer,
    PluginError,
    ProviderError,
    RateLimited,
    RunInProgress,
    ServerError,
    StreamInterrupted,
    ToolError,
)
from .files import AppendFile, append_durably, import_object, open_lock_file, unusable_sqlite, write_atomically
from .hooktiming import HookCall, HookProfile
from .jsonlimits import DEFAULT_JSON_LIMITS, JsonLimitError, JsonLimits, loads_bounded
from .jsontext import dumps_compact, unstructure_json
from .messages import (
    Message,
    ModelReply,
    ModelRequest,
    OutputSchema,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    Turn,
    Usage,
)
from .output import OUTPUT_TOOL, OutputSpec
from .markers import PROJECT, Calls, CallStyle, hookimpl, hookspec
from .parts import FilePart, ImagePart, Part, Prompt, TextPart, describe_part
from .plugins import (
    InstalledPlugin,
    Plugin,
    PluginImportWarning,
    PluginNameWarning,
    build_plugin,
    installed_plugins,
    load_plugin,
    plugin_name,
    refresh_plugins,
)
from .providers import (
    DeltaCallback,
    HttpClient,
    Provider,
    classify_status,
    context_too_long,
    iter_sse,
    model_at,
    parse_retry_after,
    read_body,
    read_json,
    register_provider,
    resolve_model,
)
from .masking import mask_error_message
from .ranges import Range, in_range
from .result import RunResult
from .stash import Stash, StashKey
from .text import as_unicode, for_terminal, markdown_code, markdown_text, plural, visible_text
from .structuring import StructureError, structure, unstructure
from .tools import CAPABILITIES, Tool, tool

if TYPE_CHECKING:  # loaded on first use at run time (see __getattr__); typed for the checker
    from .events import (
        AnswerSentBack,
        AssistantMessage,
        CompactionDone,
        Event,
        ModelFallback,
        OutputDelta,
        ProviderRequest,
        ProviderRetry,
        RunEnd,
        RunStart,
        SideCallEnd,
        TextDelta,
        ThinkingDelta,
        ToolAnswered,
        ToolCallDelta,
        ToolEnd,
        ToolRefused,
        ToolStart,
        TurnEnd,
        TurnStart,
        event_names,
    )
    from .providers import openai_wire
    from .providers.openai import OpenAICompatible
    from .providers.openai_wire import ChunkAssembler, WireOptions
    from .toolrun import invoke_tool

__version__ = "0.1.0"


#: Public names whose module loads on first use, by module: the OpenAI-compatible provider and
#: its wire format (see bandoneon.providers), the events, whose attrs classes a run creates
#: when it starts (the loop imports them), and the loop's way of running one tool (asyncio);
#: ``import bandoneon`` alone (a CLI, a config check) skips them (issue #19).
_DEFERRED = {
    "invoke_tool": "toolrun",
    **dict.fromkeys(("ChunkAssembler", "OpenAICompatible", "WireOptions", "openai_wire"), "providers"),
    **dict.fromkeys(
        (
            "AnswerSentBack",
            "AssistantMessage",
            "CompactionDone",
            "Event",
            "ModelFallback",
            "OutputDelta",
            "ProviderRequest",
            "ProviderRetry",
            "RunEnd",
            "RunStart",
            "SideCallEnd",
            "TextDelta",
            "ThinkingDelta",
            "ToolAnswered",
            "ToolCallDelta",
            "ToolEnd",
            "ToolRefused",
            "ToolStart",
            "TurnEnd",
            "TurnStart",
            "event_names",
            "events",
        ),
        "events",
    ),
}


def __getattr__(name: str) -> object:
    module = _DEFERRED.get(name)
    if module is None:
        raise AttributeError(f"module 'bandoneon' has no attribute {name!r}")
    import importlib

    found = importlib.import_module(f".{module}", __name__)
    value = found if name == module else getattr(found, name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFERRED})


__all__ = [
    "CAPABILITIES",
    "DEFAULT_JSON_LIMITS",
    "ChunkAssembler",
    "PROJECT",
    "Agent",
    "AnswerSentBack",
    "AppendFile",
    "CallStyle",
    "Calls",
    "AssistantMessage",
    "AuthError",
    "BadRequest",
    "BadResponse",
    "BandoneonError",
    "Compacted",
    "CompactionDone",
    "Config",
    "ConfigError",
    "ContextTooLong",
    "DeltaCallback",
    "Event",
    "FilePart",
    "FinalAnswer",
    "HookCall",
    "HookProfile",
    "HttpClient",
    "ImagePart",
    "InstalledPlugin",
    "JsonLimitError",
    "JsonLimits",
    "Message",
    "ModelFallback",
    "ModelReply",
    "ModelRequest",
    "NetworkError",
    "NoAnswer",
    "OUTPUT_TOOL",
    "OutputDelta",
    "OutputSchema",
    "OutputSpec",
    "Part",
    "OpenAICompatible",
    "Plugin",
    "Prompt",
    "PluginError",
    "PluginImportWarning",
    "PluginNameWarning",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderRetry",
    "Range",
    "RateLimited",
    "Refuse",
    "Respond",
    "Retry",
    "RunContext",
    "RunEnd",
    "RunInProgress",
    "RunResult",
    "RunStart",
    "SideCallEnd",
    "SendBack",
    "ServerError",
    "Stop",
    "StreamInterrupted",
    "Stash",
    "StashKey",
    "StructureError",
    "TextDelta",
    "TextPart",
    "Thinking",
    "ThinkingDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolAnswered",
    "ToolEnd",
    "ToolError",
    "ToolRefused",
    "ToolResult",
    "ToolSpec",
    "ToolStart",
    "Turn",
    "TurnEnd",
    "TurnStart",
    "Usage",
    "WireOptions",
    "__version__",
    "append_durably",
    "unusable_sqlite",
    "build_plugin",
    "classify_status",
    "context_too_long",
    "describe_part",
    "dumps_compact",
    "event_names",
    "hookimpl",
    "hookspec",
    "import_object",
    "in_range",
    "installed_plugins",
    "invoke_tool",
    "iter_sse",
    "load_config",
    "load_plugin",
    "loads_bounded",
    "model_at",
    "openai_wire",
    "parse_retry_after",
    "as_unicode",
    "for_terminal",
    "markdown_code",
    "markdown_text",
    "mask_error_message",
    "open_lock_file",
    "plural",
    "plugin_name",
    "read_body",
    "read_json",
    "refresh_plugins",
    "register_provider",
    "resolve_model",
    "structure",
    "tool",
    "unstructure",
    "unstructure_json",
    "visible_text",
    "write_atomically",
]
