"""Well-known secret shapes are masked by default, each can be switched off, ordinary text is kept."""

from __future__ import annotations

import bandoneon
import pytest
from bandoneon.testing import ScriptedModel, call
from bandoneon_guard import DEFAULT_SECRETS, Guard

# One realistic specimen per default pattern (made up; shaped like the real thing).
SPECIMENS = {
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
    "anthropic-key": "sk-ant-api03-Xy7Qp2Lm9Rt4Vw8Zk1Nb5Hc3Jd6Fg0Se",
    "openai-key": "sk-proj-4fQ9Zt2Lm8Rw1Xk7Vb3Nc6Hd0Jg5Pa",
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "gitlab-token": "glpat-xQ3vT9mK2pL8rW4nZ7yB",
    "slack-token": "xoxb-2048-4096-Zq7Lk2Pm9Rt4Vw8",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "url-password": "postgresql://admin:hunter2@db.internal:5432/orders",
}

ORDINARY = (
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nMerge: 1a2b3c4 5d6e7f8\n"
    "request 123e4567-e89b-12d3-a456-426614174000 ok; see https://example.org/docs?page=2 "
    "and git@github.com:owner/repo.git; sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855; "
    "sk-learn is a library, ask-me-anything, AKIA is a prefix"
)


def result_seen(guard: Guard, text: str) -> str:
    @bandoneon.tool
    def read_config() -> str:
        """Read the deployment configuration."""
        return text

    model = ScriptedModel(call("read_config"), "done")
    bandoneon.Agent(model, tools=[read_config], plugins=[guard], context_files=False).run_sync("read")
    return model.requests[1].messages[-1].content


def test_the_table_has_a_specimen_for_every_pattern():
    assert sorted(SPECIMENS) == sorted(r.name for r in DEFAULT_SECRETS)


@pytest.mark.parametrize("name", sorted(SPECIMENS))
def test_each_default_secret_is_masked_before_the_model_reads_it(name):
    specimen = SPECIMENS[name]
    seen = result_seen(Guard(), f"config: {specimen} (end)")
    secret_part = "hunter2" if name == "url-password" else specimen
    assert secret_part not in seen
    assert "(end)" in seen and "config:" in seen
    if name == "url-password":
        assert "postgresql://admin:***@db.internal:5432/orders" in seen
    else:
        assert f"[{name} masked]" in seen


@pytest.mark.parametrize("name", sorted(SPECIMENS))
def test_each_default_secret_can_be_switched_off_alone(name):
    everything = " | ".join(SPECIMENS.values())
    seen = result_seen(Guard(unmasked_secrets=[name]), everything)
    assert SPECIMENS[name] in seen
    others = [n for n in SPECIMENS if n != name and n != "url-password"]
    assert all(SPECIMENS[other] not in seen for other in others)


def test_star_switches_every_default_off():
    everything = " | ".join(SPECIMENS.values())
    assert result_seen(Guard(unmasked_secrets=["*"]), everything) == everything


def test_hashes_uuids_and_plain_urls_are_not_masked():
    assert result_seen(Guard(), ORDINARY) == ORDINARY


def test_an_unknown_secret_name_is_a_config_error_naming_the_known_ones():
    with pytest.raises(bandoneon.ConfigError, match=r"'unmasked_secrets'.*'jwtt'.*known: private-key"):
        Guard(unmasked_secrets=["jwtt"])
    with pytest.raises(bandoneon.ConfigError, match="'jwtt'"):
        bandoneon.Agent(ScriptedModel(), plugins={"guard": {"unmasked_secrets": ["jwtt"]}}, context_files=False)
