"""bandoneon-skillpack-bakery: the level 8 bakery's skills, shipped as a pip-installable skill pack.

The package holds SKILL.md folders as package data and declares the folder in the
``bandoneon.skills`` entry-point group (see pyproject.toml). Installing it is all it takes:
every agent with the ``skills`` plugin sees these skills, unless ``Skills(packs=[...])``
leaves the pack out or the operator sets ``BANDONEON_DISABLED_SKILLPACKS=bakery``.
"""

from importlib.resources import files

__all__ = ["SKILLS"]

#: The folder of skill folders this pack ships (what the entry point points at).
SKILLS = files(__name__) / "skills"
