"""bandoneon-skills: on-demand skills (level 8 of the Agent Harness Patterns track).

Skills come from folders of ``<name>/SKILL.md``, from memory, from installed skill packs
(entry-point group ``bandoneon.skills``) and from any plugin's ``register_skills`` hook; the
``Skills`` plugin shows them to the model in one of three modes and enforces ``allowed-tools``.
"""

from .library import Library
from .plugin import LOAD_TOOL, MODES, READ_TOOL, Skills
from .skill import Skill, SkillError, SkillWarning, parse_skill_md
from .sources import PACK_GROUP, FolderSource, MemorySource, SkillSource, installed_packs

__all__ = [
    "LOAD_TOOL",
    "MODES",
    "PACK_GROUP",
    "READ_TOOL",
    "FolderSource",
    "Library",
    "MemorySource",
    "Skill",
    "SkillError",
    "SkillSource",
    "SkillWarning",
    "Skills",
    "installed_packs",
    "parse_skill_md",
]
