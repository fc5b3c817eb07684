"""The default secret table: well-known shapes of credentials, masked in every result.

Each entry is a ``Redaction`` named for what it finds. The patterns anchor on the fixed prefix
or structure each issuer puts in its tokens (``sk-ant-``, ``AKIA``, ``ghp_``, ``xoxb-``, a PEM
header), so ordinary text (git hashes, UUIDs, base64 data) is left alone. A guard applies all
of them unless its ``unmasked_secrets`` option names some (or ``"*"``) to switch off.
"""

from __future__ import annotations

from .rules import Redaction

__all__ = ["DEFAULT_SECRETS", "secret_redactions"]

_SOURCE = "guard default secrets"


def _secret(name: str, pattern: str, replacement: str | None = None) -> Redaction:
    return Redaction(name=name, pattern=pattern, replacement=replacement or f"[{name} masked]", source=_SOURCE)


#: In order: the more specific shapes first (an Anthropic key also starts with ``sk-``).
DEFAULT_SECRETS: tuple[Redaction, ...] = (
    _secret("private-key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)"),
    _secret("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _secret("openai-key", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _secret("aws-access-key-id", r"\b(?:AKIA|ASIA|ABIA|ACCA|AIDA|AROA)[A-Z0-9]{16}\b"),
    _secret("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    _secret("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|cbt|oas)-[A-Za-z0-9_-]{20,}"),
    _secret("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"),
    _secret("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}"),
    # The password between ``user:`` and ``@`` of a URL or DSN; the rest stays readable.
    _secret("url-password", r"\b([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*):[^/\s@]+@", r"\1:***@"),
)


def secret_redactions(unmasked: list[str] | tuple[str, ...]) -> tuple[Redaction, ...]:
    """The default table without the entries named in ``unmasked`` (``"*"``: all of them).

    An unknown name is a ``ConfigError`` listing the known ones, so a typo never leaves a secret
    shape switched on that the user meant off (or the other way round).
    """
    import bandoneon

    known = [r.name for r in DEFAULT_SECRETS]
    unknown = sorted(set(unmasked) - {*known, "*"})
    if unknown:
        raise bandoneon.ConfigError(f"guard: 'unmasked_secrets': no default secret pattern is named {unknown[0]!r}; known: {', '.join(known)} (or '*')")
    if "*" in unmasked:
        return ()
    return tuple(r for r in DEFAULT_SECRETS if r.name not in unmasked)
