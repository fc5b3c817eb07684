import bandoneon
from bandoneon.testing import ScriptedModel
from bandoneon_template import Template


def test_the_section_reaches_the_model():
    model = ScriptedModel("hi")
    agent = bandoneon.Agent(model, plugins=[Template(greeting="be brief")], context_files=False)
    agent.run_sync("hello")
    assert "be brief" in model.requests[0].system_prompt
