"""The system prompt sections: the catalog (on-demand, filesystem) or every body (all).

The instruction to load before answering is spelled out, because small models otherwise
answer without reading the manual they needed (level 8, "What to watch").
"""

from __future__ import annotations

from collections.abc import Mapping

from .skill import Skill

__all__ = ["render_all", "render_catalog"]


def render_catalog(skills: Mapping[str, Skill], *, tool_name: str, with_paths: bool) -> str | None:
    """One line per skill: its name, its description (the trigger) and, in filesystem mode, its path."""
    if not skills:
        return None
    if with_paths:
        how = (
            f"read its SKILL.md with {tool_name} (the path is listed) before you answer, and follow it. "
            f"Files next to a SKILL.md can be read the same way when it points to them."
        )
        lines = [f"- `{s.name}` ({s.location}): {s.description}" for s in skills.values()]
    else:
        how = f"call {tool_name} with its name before you answer, and follow the instructions it returns."
        lines = [f"- `{s.name}`: {s.description}" for s in skills.values()]
    return "\n".join(
        [
            "<available-skills>",
            f"Skills are manuals for particular jobs. When the request matches a skill's description, {how}",
            *lines,
            "</available-skills>",
        ]
    )


def render_all(skills: Mapping[str, Skill]) -> str | None:
    """Every skill's full body: no tool call needed, and every request pays for all of them."""
    if not skills:
        return None
    parts = ["<skills>", "Follow the skill whose description matches the request."]
    for skill in skills.values():
        parts.append(f'<skill name="{skill.name}" description="{_attribute(skill.description)}">\n{skill.body}\n</skill>')
    parts.append("</skills>")
    return "\n".join(parts)


def skill_result(skill: Skill) -> str:
    """What ``load_skill`` returns: the body, and the tool limit when the skill sets one."""
    text = f'<skill name="{skill.name}">\n{skill.body}\n</skill>'
    if skill.allowed_tools is not None:
        allowed = ", ".join(skill.allowed_tools) or "no other tools"
        text += f"\nWhile this skill is loaded, the only tools you may use are: {allowed}."
    return text


def _attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
