"""bandoneon-guard: the walls in code (level 14 of the Agent Harness Patterns track).

Allow rules decide on every call, redaction masks data in results, outside text is marked
as untrusted, the lethal trifecta is checked when an agent is built, and policy packs make
rules binding for every agent of an environment.
"""

from .enforce import Enforcer
from .marking import UNTRUSTED_PROMPT, mark_untrusted, wrapper_tags
from .packs import PolicyPack, installed_pack_policies
from .plugin import Guard
from .policy import TRIFECTA_MODES, Policy, load_policy, merge_policies, policy_from_mapping, policy_from_text
from .rules import CHECKS, Redaction, Rule
from .secrets import DEFAULT_SECRETS
from .trifecta import TrifectaWarning, trifecta_legs

__all__ = [
    "CHECKS",
    "DEFAULT_SECRETS",
    "TRIFECTA_MODES",
    "UNTRUSTED_PROMPT",
    "Enforcer",
    "Guard",
    "Policy",
    "PolicyPack",
    "Redaction",
    "Rule",
    "TrifectaWarning",
    "installed_pack_policies",
    "load_policy",
    "mark_untrusted",
    "merge_policies",
    "policy_from_mapping",
    "policy_from_text",
    "trifecta_legs",
    "wrapper_tags",
]
