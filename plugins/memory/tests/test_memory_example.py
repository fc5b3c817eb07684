"""The level 9 example runs end to end with a scripted model and the mock embeddings server."""

from pathlib import Path

from bandoneon.testing import ScriptedModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_09_memory.py"


def load_example():
    module = load_script(EXAMPLE)
    return module


def test_the_coffee_roaster_remembers_a_kilo_of_colombia_across_sessions(mock_llm, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BANDONEON_MEMORY_PATH", str(tmp_path / "memory.sqlite3"))
    monkeypatch.setenv("BANDONEON_EMBEDDER", f"openai-compatible:embed@{mock_llm.base_url}")
    example = load_example()
    order = {"origin": "Colombia", "kilos": 1, "grind": "moka", "ship_to": "Rosario"}
    model = ScriptedModel(
        [call("remember", note="Buys 1 kg Colombia, ground for moka, shipped to Rosario"), call("place_order", order)],
        "Done: 1 kg Colombia for your moka pot, on its way to Rosario.",
        call("recall", query="what did the customer order last time Colombia kg"),
        call("place_order", order),
        "Same as last time: 1 kg Colombia, moka grind, to Rosario.",
    )
    result = example.main(model)
    assert result.ok and "Colombia" in result.text
    tuesday_requests = model.requests[2:]
    assert "Hi again" in tuesday_requests[0].messages[0].content and len(tuesday_requests[0].messages) == 1
    recalled = [m for m in tuesday_requests[1].messages if m.role == "tool"][0].content
    assert "Buys 1 kg Colombia, ground for moka, shipped to Rosario" in recalled
    assert "Tuesday: Same as last time" in capsys.readouterr().out
    model.assert_all_used()
