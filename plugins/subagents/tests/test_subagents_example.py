from pathlib import Path

from bandoneon.testing import FunctionModel, call, load_script

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "level_15_subagents.py"


def load_example():
    module = load_script(EXAMPLE)
    return module


def test_the_san_telmo_example_sends_two_scouts_and_keeps_the_parent_small():
    def answer(request):
        last = request.messages[-1]
        if request.system_prompt.startswith("You find milongas"):
            return call("search_events", neighborhood="San Telmo", date="Saturday") if last.role == "user" else "La Catedral del Tango\nDefensa 1200\n22:00-03:00"
        if request.system_prompt.startswith("You find restaurants"):
            return call("search_places", near="Defensa") if last.role == "user" else "El Desnivel\nDefensa 855\nparrilla, open late"
        if last.role == "user":
            return [call("milonga_scout", task="A milonga in San Telmo on Saturday night."), call("food_scout", task="Dinner near Defensa before 22:00.")]
        return "Dinner at El Desnivel, then La Catedral del Tango at 22:00."

    model = FunctionModel(answer)
    result = load_example().main(model)
    assert result.ok and "La Catedral" in result.text
    parent_requests = [r for r in model.requests if r.system_prompt.startswith("You plan evenings")]
    assert len(parent_requests) == 2
    assert all("beginners' class" not in m.content for r in parent_requests for m in r.messages)
