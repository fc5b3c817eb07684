"""bandoneon-retry: retry what the model's server may fix by itself (level 5 of the track).

429 (honouring Retry-After), 5xx and network errors are retried with capped exponential
backoff and full jitter, a maximum number of attempts and a deadline; 400/401/403/404/422
and a stream that broke after part of it was shown are never retried.
"""

from .plugin import Backoff
from ._events import RetryAfterCapped

__all__ = ["Backoff", "RetryAfterCapped"]
