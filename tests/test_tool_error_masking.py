"""A tool's exception reaches the model without home or project paths and without passwords."""

from __future__ import annotations

import logging
import os

import bandoneon
import pytest
from bandoneon.testing import Reply


def failing_agent(mock_llm, message: str, *, cwd, error: type[Exception] = RuntimeError) -> bandoneon.Agent:
    @bandoneon.tool
    def load_orders() -> str:
        """Load today's orders from the database."""
        raise error(message)

    mock_llm.add(Reply(tool_calls=[("load_orders", {})]), Reply(text="I could not load them."))
    return bandoneon.Agent(f"openai-compatible:mock@{mock_llm.base_url}", tools=[load_orders], plugins=[], context_files=False, cwd=cwd)


def what_the_model_read(mock_llm) -> str:
    messages = mock_llm.requests[1].json["messages"]
    return next(m["content"] for m in messages if m["role"] == "tool")


def test_paths_and_connection_passwords_are_masked_and_the_log_keeps_everything(mock_llm, tmp_path, caplog):
    home = os.path.expanduser("~")
    message = (
        f"cannot open {tmp_path}/data/orders.db nor {home}/.config/orders/secret.toml; "
        "connect postgresql://admin:hunter2@db.internal:5432/orders failed; dsn: host=db password=s3cr3t user=app"
    )
    with caplog.at_level(logging.WARNING, logger="bandoneon"):
        failing_agent(mock_llm, message, cwd=tmp_path).run_sync("load today's orders")
    seen = what_the_model_read(mock_llm)
    assert "<project>/data/orders.db" in seen and "~/.config/orders/secret.toml" in seen
    assert str(tmp_path) not in seen and f"{home}/" not in seen
    assert "hunter2" not in seen and "s3cr3t" not in seen
    assert "postgresql://admin:***@db.internal:5432/orders" in seen and "password=***" in seen
    assert "hunter2" in caplog.text and str(tmp_path) in caplog.text


def test_a_tool_error_written_for_the_model_passes_as_written(mock_llm, tmp_path):
    message = f"No orders in {tmp_path}/data for that day; try yesterday."
    failing_agent(mock_llm, message, cwd=tmp_path, error=bandoneon.ToolError).run_sync("load")
    assert what_the_model_read(mock_llm).endswith(message)  # the wire adds "Error: " to error results, nothing else


@pytest.mark.parametrize("neighbour", ["sibling", "x"])
def test_a_folder_that_only_starts_like_the_project_is_not_rewritten(mock_llm, tmp_path, neighbour):
    project = tmp_path / "app"
    other = f"{tmp_path}/app{neighbour}/file"
    failing_agent(mock_llm, f"missing {other}", cwd=project).run_sync("load")
    assert f"app{neighbour}/file" in what_the_model_read(mock_llm)
