"""bandoneon-human: a person in the loop (level 13 of the Agent Harness Patterns track).

Approve irreversible calls, steer a run from any thread, let the model ask, keep an audit
log, and pause a run that waits for an answer so another process can resume it.
"""

from .audit import AuditLog
from .channels import Answer, ApprovalRequest, Callbacks, Channel, HumanQueue, NoOneToAsk, Question, Terminal
from .events import ApprovalAnswered, ApprovalRequested, Steering
from .hookspecs import Approved
from .pending import Pending, PendingTampered, answer_pending, call_digest, read_pending
from .plugin import Human

__all__ = [
    "Answer",
    "ApprovalAnswered",
    "ApprovalRequest",
    "ApprovalRequested",
    "Approved",
    "AuditLog",
    "Callbacks",
    "Channel",
    "Human",
    "HumanQueue",
    "NoOneToAsk",
    "Pending",
    "PendingTampered",
    "Question",
    "Steering",
    "Terminal",
    "answer_pending",
    "call_digest",
    "read_pending",
]
