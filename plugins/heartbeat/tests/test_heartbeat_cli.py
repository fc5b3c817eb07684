import fcntl
import json
import time
import uuid
from pathlib import Path

import bandoneon
import pytest
from bandoneon.cli import main
from bandoneon.testing import FunctionModel, MockLLMServer, Reply, call, load_script
from bandoneon_heartbeat import HeartbeatPlugin

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_16_heartbeat.py"


@pytest.fixture
def server():
    with MockLLMServer() as running:
        yield running


@pytest.fixture
def config(tmp_path, monkeypatch, server):
    """A heartbeat TOML file whose local condition reads a flag file."""
    module = f"petgauges_{uuid.uuid4().hex}"  # a new module per test: sys.modules caches imports
    (tmp_path / f"{module}.py").write_text(
        "from pathlib import Path\n"
        f"FLAG = Path({str(tmp_path / 'hungry')!r})\n"
        "def hungry():\n    return FLAG.exists()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(**overrides):
        options = {
            "check_prompt": "Check on the pet.",
            "interval": 3600,
            "model": "openai-compatible:m@" + server.base_url,
            "local_condition": f"{module}:hungry",
            "max_ticks": 2,
        } | overrides
        lines = [f"{key} = {json.dumps(value)}" for key, value in options.items()]
        path = tmp_path / "pet.toml"
        path.write_text("\n".join(lines) + "\n")
        return path

    return write


def state_of(tmp_path):
    return json.loads((tmp_path / "pet.state.json").read_text())


def test_once_fires_one_tick_and_keeps_the_count_on_disk(config, tmp_path, server, capsys):
    (tmp_path / "hungry").touch()
    server.add(Reply(text="Fed the pet."))
    assert main(["heartbeat", str(config()), "--once"]) == 0
    assert "tick 1: woken (end_turn) · Fed the pet." in capsys.readouterr().out
    state = state_of(tmp_path)
    assert state["ticks"] == 1 and state["last_outcome"]["outcome"] == "woken"


def test_once_respects_max_ticks_across_invocations(config, tmp_path, server, capsys):
    path = config(max_ticks=2)
    for _ in range(2):
        assert main(["heartbeat", str(path), "--once"]) == 0
    assert main(["heartbeat", str(path), "--once"]) == 0
    out = capsys.readouterr().out
    assert "tick 1: quiet" in out and "tick 2: quiet" in out
    assert "heartbeat finished: max_ticks (2 ticks in all)" in out
    assert server.requests == []  # a quiet tick never calls the model
    assert state_of(tmp_path)["ticks"] == 2


def test_ticks_missed_while_nothing_ran_are_reported(config, tmp_path, capsys):
    path = config(max_ticks=5)
    assert main(["heartbeat", str(path), "--once"]) == 0
    state = state_of(tmp_path)
    state["last_tick_at"] = time.time() - 5.5 * 3600
    (tmp_path / "pet.state.json").write_text(json.dumps(state))
    assert main(["heartbeat", str(path), "--once"]) == 0
    assert "4 ticks were missed while nothing ran" in capsys.readouterr().out


def test_the_in_process_timer_runs_until_a_fuse(config, tmp_path, capsys):
    assert main(["heartbeat", str(config(interval=0.01, max_ticks=2))]) == 0
    assert "heartbeat finished: max_ticks after 2 ticks; 0 of this run's 2 ticks woke the model" in capsys.readouterr().out


def test_a_second_process_on_the_same_heartbeat_drops_its_tick(config, tmp_path, capsys):
    path = config()
    with open(tmp_path / "pet.state.json.lock", "a+") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(["heartbeat", str(path), "--once"]) == 0
    assert "tick dropped: this heartbeat is already running" in capsys.readouterr().out
    assert not (tmp_path / "pet.state.json").exists()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"interval": 0}, "interval must be above 0 seconds, got 0"),
        ({"intervall": 5}, "intervall"),
        ({"local_condition": "os:nope"}, "has no 'nope'"),
    ],
)
def test_a_bad_config_exits_2_with_a_clear_message(config, tmp_path, capsys, overrides, message):
    assert main(["heartbeat", str(config(**overrides)), "--once"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "pet.state.json").exists()


@pytest.mark.parametrize("key", ["source", "intervall"])
def test_a_key_nobody_may_write_is_refused_and_the_allowed_ones_are_only_those(config, capsys, key):
    assert main(["heartbeat", str(config(**{key: "x"})), "--once"]) == 2
    said = capsys.readouterr().err
    assert f"Unknown field {key!r}" in said
    allowed = said.split("(allowed: ")[1]
    assert "source" not in allowed and "check_prompt" in allowed


def test_a_missing_config_file_exits_2(tmp_path, capsys):
    assert main(["heartbeat", str(tmp_path / "nope.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_plugin_is_found_by_its_entry_point():
    assert bandoneon.load_plugin("heartbeat") is HeartbeatPlugin


def test_the_pocket_pet_example_wakes_the_model_once_and_beeps_once():
    example = load_script(EXAMPLE)

    def carer(request):
        last = request.messages[-1]
        if last.role == "user":
            return call("check_status")
        if last.name == "check_status":
            return call("feed", food="meal")
        if last.name == "feed":
            return call("beep_owner", text="Milonga was hungry: fed her a meal, all good now.")
        return "Milonga is fed."

    model = FunctionModel(carer)
    # Fast ticks, but a wall-clock fuse a loaded machine cannot trip (60 ms was the default).
    report = example.main(model, interval=0.001, timeout=30)
    assert (report.stop, report.ticks, report.woken) == ("max_ticks", 5, 1)
    assert [o.outcome for o in report.outcomes] == ["quiet", "quiet", "woken", "quiet", "quiet"]
    beeps = [m for r in model.requests for m in r.messages[-1:] if m.name == "beep_owner"]
    assert len(beeps) == 1


def test_a_tick_s_words_are_shown_without_obeying_their_escapes(config, tmp_path, server, capsys):
    (tmp_path / "hungry").touch()
    server.add(Reply(text="Fed\x1b]0;owned\x07 the \u202epet\x1b[2K"))
    assert main(["heartbeat", str(config()), "--once"]) == 0
    out = capsys.readouterr().out
    assert "tick 1: woken (end_turn) · Fed\\x1b]0;owned\\x07 the \\u202epet\\x1b[2K" in out
    assert "\x1b" not in out and "\u202e" not in out
