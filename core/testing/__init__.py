"""The testing kit: test agents without a model, and providers without the network.

- ``ScriptedModel`` / ``FunctionModel``: in-process providers (a queue, or a function).
- ``MockLLMServer``: a real OpenAI- and Anthropic-compatible HTTP server on 127.0.0.1 with
  scripted replies and fault injection (``Reply``, ``Fault``).
- ``FaultyDisk``: the disk under ``write_atomically`` / ``append_durably`` / ``AppendFile``
  fails, tears or shortens a write at a chosen byte (durability tests for stores);
  ``WriteLog`` learns where a run's writes fall (``fault_points()``), ``sweep_folder()`` (the
  ``sweep_dir`` fixture) is where a sweep's thousands of files go.
- ``load_script(path)``: import an example or agent script by path to call its functions.
- ``assert_history_valid(messages)`` / ``history_problems(messages)``: what a strict server
  checks of a history (every tool call answered once, right after its message).
- ``json_paths(document)`` / ``replaced_at(document, path, value)``: every place a JSON document
  holds a value, and the document with another one there (property tests of hostile files).
- ``install_distribution(site, name, entry_points, files=...)``: a distribution as pip leaves it
  (modules and dist-info), for tests of plugin discovery.
- pytest fixtures (installed through the ``pytest11`` entry point): ``mock_llm`` (a running
  server), ``scripted`` (a fresh ``ScriptedModel``), ``sweep_dir`` (a ``sweep_folder()``).
"""

from .disk import FaultyDisk, WriteLog, sweep_folder
from .distributions import install_distribution
from .documents import json_paths, replaced_at
from .history import assert_history_valid, history_problems
from .models import FunctionModel, ScriptedModel, call, load_script, reply
from .server import Fault, MockLLMServer, RecordedRequest, Reply

__all__ = [
    "Fault",
    "FaultyDisk",
    "FunctionModel",
    "MockLLMServer",
    "RecordedRequest",
    "Reply",
    "ScriptedModel",
    "WriteLog",
    "assert_history_valid",
    "call",
    "history_problems",
    "install_distribution",
    "json_paths",
    "load_script",
    "replaced_at",
    "reply",
    "sweep_folder",
]
