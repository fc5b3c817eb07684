"""bandoneon-anthropic: Claude through the Anthropic Messages API, over httpx (no SDK).

``Agent("anthropic:claude-sonnet-4-5")`` once installed; the key comes from
``$ANTHROPIC_API_KEY``.
"""

from .plugin import Anthropic
from .provider import ANTHROPIC_VERSION, AnthropicProvider, anthropic_model

__all__ = ["ANTHROPIC_VERSION", "Anthropic", "AnthropicProvider", "anthropic_model"]
