"""``Agent[Deps, Output]`` and ``RunResult[Output]`` as mypy reads them: the generics are part of
the public contract, so a change that loses them fails here."""

from __future__ import annotations

import inspect
import json
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import pytest

SNIPPET = Path(__file__).parent / "typecheck" / "agent_generics.py"
CORE = Path(__file__).parent.parent / "core"


def test_mypy_infers_the_output_and_deps_types_of_agents_and_results(tmp_path):
    pytest.importorskip("mypy", reason="mypy is installed by tox's py environment")
    # Editable installs hide the package behind an import hook mypy cannot follow: point it at the source.
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "bandoneon").symlink_to(CORE, target_is_directory=True)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", str(SNIPPET), "--python-version", "3.11", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), "--show-error-codes", "--no-error-summary"],
        capture_output=True, text=True, env={"MYPYPATH": str(tmp_path / "path"), "PATH": ""}, timeout=300,
    )
    reported = {(int(m.group(1)), m.group(2)) for m in re.finditer(r":(\d+): error: .*\[([\w-]+)\]$", done.stdout, re.MULTILINE)}
    expected = {
        (number, m.group(1))
        for number, line in enumerate(SNIPPET.read_text().splitlines(), start=1)
        if (m := re.search(r"# E: ([\w-]+)$", line))
    }
    assert reported == expected, done.stdout + done.stderr


def test_pyright_reads_the_generics_as_mypy_does(tmp_path):
    pyright = shutil.which("pyright")
    if pyright is None:
        pytest.skip("pyright is not installed (npm install -g pyright)")
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "bandoneon").symlink_to(CORE, target_is_directory=True)
    (tmp_path / "pyrightconfig.json").write_text(json.dumps({"extraPaths": ["path"], "pythonVersion": "3.11"}))
    done = subprocess.run([pyright, "--outputjson", str(SNIPPET)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    reported = sorted({d["range"]["start"]["line"] + 1 for d in json.loads(done.stdout)["generalDiagnostics"] if d["severity"] == "error"})
    expected = [number for number, line in enumerate(SNIPPET.read_text().splitlines(), start=1) if re.search(r"# E: [\w-]+$", line)]
    assert reported == expected, done.stdout


def test_the_constructor_overloads_take_the_same_options_as_the_constructor():
    from bandoneon import Agent

    names = list(inspect.signature(Agent.__init__).parameters)
    overloads = typing.get_overloads(Agent.__init__)
    assert len(overloads) == 2
    for overload in overloads:
        assert list(inspect.signature(overload).parameters) == names
