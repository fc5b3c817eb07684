"""Permission to give up: a model that is allowed to stop, stops sooner."""

import bandoneon
from bandoneon.testing import ScriptedModel
from bandoneon_stop import DEFAULT_GIVE_UP_TEXT, StopRules


def prompt_sent(rules: StopRules, system_prompt: str = "You find stars.") -> str:
    model = ScriptedModel("ok")
    bandoneon.Agent(model, plugins=[rules], system_prompt=system_prompt, context_files=False).run_sync("go")
    return model.requests[0].system_prompt


def test_permission_to_give_up_adds_the_instruction_to_the_system_prompt():
    sent = prompt_sent(StopRules(permission_to_give_up=True))
    assert sent.startswith("You find stars.") and DEFAULT_GIVE_UP_TEXT in sent


def test_the_give_up_instruction_can_be_worded_by_the_user():
    assert prompt_sent(StopRules(permission_to_give_up=True, give_up_text="Say 'no star' if unsure.")).endswith("Say 'no star' if unsure.")


def test_the_system_prompt_is_untouched_by_default():
    assert prompt_sent(StopRules()) == "You find stars."
