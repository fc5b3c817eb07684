"""The human plugin: approve, steer, escalate, keep a record (level 13).

Approvals and steering live in ``before_tool_execution``; what the person says goes back
to the model as the call's result. Every outcome (approved, denied, timeout, a channel that
raised, a correction) is a loop result, never an exception, so no error handler can
swallow it and let the tool run unapproved.
"""

from __future__ import annotations

import asyncio
import fnmatch
import logging
import threading
import time
import uuid
from collections.abc import Coroutine, Sequence
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, ClassVar

import attrs

import bandoneon
from bandoneon import RunContext

from . import hookspecs as human_hooks
from .audit import AuditLog
from .channels import Answer, ApprovalRequest, Channel, NoOneToAsk, Question, as_answer, as_channel
from .events import ApprovalAnswered, ApprovalRequested, Steering
from .pending import Pending, call_digest, claim_once, consume_pending, now, read_pending, shown_call, write_pending

__all__ = ["Human"]

log = logging.getLogger("bandoneon.human")

_NOT_ANSWERED = object()
#: This run's answers, cancelled calls and pause reason.
_RUN_STATE = bandoneon.StashKey[dict[str, Any]]("human")
ASK_DESCRIPTION = (
    "Ask the person you work for a question and wait for their answer. Use it when information is "
    "missing, when two options are equally good, or when you are not sure what they want."
)


@attrs.define
class Human(bandoneon.Plugin):
    """A person in the loop. ``agent.plugin(Human).steer(text)`` corrects a run from any thread or task.

    Calls need approval when their tool is flagged ``needs_approval`` or its name matches one
    of ``approve`` (globs). ``channel`` is ``"terminal"``, ``"queue"`` (a ``HumanQueue``,
    then reachable as ``plugin.channel``), ``"deny"``, a channel object or an approval callback.
    """

    name: ClassVar[str] = "human"
    #: ``request_approval`` and ``review_exhausted``: the approval channel other plugins ask through.
    hookspecs: ClassVar[ModuleType] = human_hooks
    handles_approvals: ClassVar[bool] = True

    channel: Channel = attrs.field(default="terminal", converter=as_channel)  # type: ignore[assignment]  # as_channel turns the name into a Channel
    approve: list[str] = attrs.Factory(list)
    timeout: float | None = attrs.field(default=300.0, validator=bandoneon.in_range(at_least=0, unit="seconds", optional=True))
    ask_tool: str | None = "ask_human"
    ask_description: str = ASK_DESCRIPTION
    ask_timeout: float | None = attrs.field(default=300.0, validator=bandoneon.in_range(at_least=0, unit="seconds", optional=True))
    ask_default: str = "Go on with the safest choice, or stop and say what you need to know."
    audit_log: str | None = None
    pause_file: str | None = None
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    _corrections: list[str] = attrs.field(factory=list, init=False, repr=False)
    _waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = attrs.field(factory=set, init=False, repr=False)
    _audit: AuditLog | None = attrs.field(default=None, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.audit_log:
            self._audit = AuditLog(self.audit_log)

    # ---------------------------------------------------------------- steering

    def steer(self, text: str) -> None:
        """Queue a correction, from any thread or task. At the next tool call the loop cancels
        that call and the model reads ``text`` instead; a pending approval stops waiting."""
        if not isinstance(text, str) or not text.strip():
            raise ValueError("steer() needs the correction as non-empty text")
        with self._lock:
            self._corrections.append(text.strip())
            waiters = list(self._waiters)
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    @property
    def pending_corrections(self) -> list[str]:
        """Corrections queued and not yet delivered (they wait for the next tool call)."""
        with self._lock:
            return list(self._corrections)

    def _take_corrections(self) -> str | None:
        if not self._corrections:  # every tool call asks: no lock when nothing is queued (a
            return None  # correction queued just after this is taken at the next call, as if it came then)
        with self._lock:
            taken, self._corrections[:] = list(self._corrections), []
        return "\n".join(taken) if taken else None

    async def _steered(self, run: RunContext, call: bandoneon.ToolCall, text: str) -> bandoneon.Refuse:
        state = self._state(run)
        for message in reversed(run.messages):
            if message.role == "assistant":
                for sibling in message.tool_calls:
                    if sibling.id != call.id and sibling.id not in state["answered"]:
                        state["cancelled"].add(sibling.id)
                break
        self._record(run.agent, "steering", run_id=run.run_id, call_id=call.id, tool=call.name, text=text)
        await run.emit(Steering(run.run_id, text, call))
        return bandoneon.Refuse(f"Cancelled before it ran: the person interrupted. They say: {text}")

    # ---------------------------------------------------------------- hooks

    @staticmethod
    def _state(run: RunContext) -> dict[str, Any]:
        state = run.stash.get(_RUN_STATE)
        if state is None:
            state = run.stash[_RUN_STATE] = {"answered": {}, "cancelled": set(), "paused": None}
        return state

    def needs_approval(self, tool: bandoneon.Tool) -> bool:
        if tool.name == self.ask_tool:
            return False
        if tool.needs_approval:
            return True
        return bool(self.approve) and any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in self.approve)

    @bandoneon.hookimpl
    def before_tool_execution(
        self, run: RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]
    ) -> bandoneon.Refuse | Coroutine[Any, Any, bandoneon.Refuse | bandoneon.Respond | None] | None:
        state = self._state(run)
        if call.id in state["cancelled"]:
            return bandoneon.Refuse(f"Cancelled before it ran: the person interrupted (their correction is in another result of this turn); {call.name} did not run.")
        if call.id not in state["answered"] and not self._corrections and not self.needs_approval(tool):
            return None  # nothing decided, nobody steering, no approval: answered at once
        return self._decided(run, call, tool, arguments)

    async def _decided(self, run: RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any]) -> bandoneon.Refuse | bandoneon.Respond | None:
        settled = await self._settled(run, call)
        if settled is not _NOT_ANSWERED:
            return settled
        if self.needs_approval(tool):
            return await self.request_approval(run, call, tool, arguments, reason=f"{tool.name} is marked as needing a person's approval")
        return None

    @bandoneon.hookimpl
    def should_stop(self, run: RunContext) -> bandoneon.Stop | None:
        paused = self._state(run)["paused"]
        return bandoneon.Stop("paused", paused) if paused else None

    @bandoneon.hookimpl
    def register_tools(self, agent: bandoneon.Agent) -> list[bandoneon.Tool] | None:
        if not self.ask_tool:
            return None

        async def ask_human(question: Annotated[str, "The question, written so a person can answer it without context"], run: RunContext) -> str:
            return await self.ask(run, question)

        # The tool's own timeout outlives ask_timeout, so the agent's tool_timeout cannot cut a
        # person short: the plugin's default answer is what the model reads on a timeout.
        timeout = self.ask_timeout + 5 if self.ask_timeout is not None else None
        return [bandoneon.tool(name=self.ask_tool, description=self.ask_description, timeout=timeout)(ask_human)]

    @staticmethod
    @bandoneon.hookimpl
    def register_commands(subparsers: Any) -> None:
        from .cli import add_human_command

        add_human_command(subparsers)

    # ---------------------------------------------------------------- approve

    async def _settled(self, run: RunContext, call: bandoneon.ToolCall) -> Any:
        """What this run already decided for the call, or a waiting correction's refusal;
        ``_NOT_ANSWERED`` when the call is still open."""
        decided = self._state(run)["answered"].get(call.id, _NOT_ANSWERED)
        if decided is not _NOT_ANSWERED:
            return decided
        correction = self._take_corrections()
        if correction is not None:
            return await self._steered(run, call, correction)
        return _NOT_ANSWERED

    @bandoneon.hookimpl(specname="request_approval")
    async def answer_approval_request(
        self, run: RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any], reason: str
    ) -> human_hooks.Approved | bandoneon.Refuse | bandoneon.Respond:
        """The published ``request_approval`` hook: rule engines (bandoneon-guard, policy
        packs) route their approval rules here."""
        decision = await self.request_approval(run, call, tool, arguments, reason=reason)
        return human_hooks.Approved() if decision is None else decision

    async def request_approval(self, run: RunContext, call: bandoneon.ToolCall, tool: bandoneon.Tool, arguments: dict[str, Any], *, reason: str) -> bandoneon.Refuse | bandoneon.Respond | None:
        """Ask a person about this exact call; None if they said yes, else a ``Refuse`` (or a
        ``Respond`` with the result an earlier process recorded for it, when it already ran).
        One call is asked about once per run, whoever asks."""
        state = self._state(run)
        settled = await self._settled(run, call)
        if settled is not _NOT_ANSWERED:
            return settled
        plain = bandoneon.unstructure(dict(arguments))
        shown = shown_call(tool.name, plain)
        request = ApprovalRequest(uuid.uuid4().hex[:12], run.run_id, tool.name, plain, shown, reason)
        record = {
            "run_id": run.run_id, "call_id": call.id, "request_id": request.id, "tool": tool.name, "arguments": plain,
            "shown": shown, "digest": call_digest(tool.name, plain), "reason": reason,
        }
        resumed = self._resumed_answer(run, call, tool.name, plain)
        if isinstance(resumed, (bandoneon.Refuse, bandoneon.Respond)):
            self._record(run.agent, "approval", **record, outcome="resumed_after_crash")
            state["answered"][call.id] = resumed
            return resumed
        if resumed is not None:
            decision = None if resumed.approved else self._denied(shown, resumed.note)
            if not self._record(run.agent, "approval", **record, outcome="resumed", approved=resumed.approved, by=resumed.by, note=resumed.note):
                decision = self._unrecorded(shown)
            await run.emit(ApprovalAnswered(run.run_id, request.id, call, "resumed", resumed.by, resumed.note))
        else:
            decision, is_final = await self._ask_for_approval(run, call, request, record)
            if not is_final:
                return decision  # a correction came while waiting: not the person's answer to this call
        state["answered"][call.id] = decision
        return decision

    async def _ask_for_approval(
        self, run: RunContext, call: bandoneon.ToolCall, request: ApprovalRequest, record: dict[str, Any]
    ) -> tuple[bandoneon.Refuse | None, bool]:
        """The decision, and whether it is the final word on this call (a correction is not)."""
        await run.emit(ApprovalRequested(run.run_id, request.id, call, request.shown, request.reason, request.arguments))
        started = time.monotonic()
        outcome, answer, error = await self._wait(request)
        waited = round(time.monotonic() - started, 3)
        by, note = (answer.by, answer.note) if answer is not None else ("", "")
        decision: bandoneon.Refuse | None
        if outcome == "answered" and answer is not None:
            outcome = "approved" if answer.approved else "denied"
            decision = None if answer.approved else self._denied(request.shown, note)
        elif outcome == "steered":
            correction = self._take_corrections() or "(the correction was already delivered)"
            self._record(run.agent, "approval", **record, outcome="steered", waited_seconds=waited)
            await run.emit(ApprovalAnswered(run.run_id, request.id, call, "steered"))
            return await self._steered(run, call, correction), False
        elif outcome == "timeout" and self.pause_file:
            outcome = "paused"
            write_pending(self.pause_file, Pending(
                run.run_id, call.id, request.tool, request.arguments, request.shown, request.reason, now(),
                digest=record["digest"], audit_log=str(Path(self.audit_log).resolve()) if self.audit_log else None,
            ))
            self._state(run)["paused"] = f"waiting for a person to approve {request.shown}; answer in {self.pause_file}"
            decision = bandoneon.Refuse(f"Paused: {request.shown} is waiting for a person's approval. The run stops here and resumes when they answer.")
        elif outcome == "timeout":
            decision = bandoneon.Refuse(
                f"No one answered the approval request for {request.shown} within {self.timeout:g} seconds, so it did not run "
                "(no answer means no). Do something else, or tell the user it needs their approval."
            )
        else:
            _log_channel_error(f"the approval channel failed for {request.shown}", error)
            why = error if isinstance(error, NoOneToAsk) else "the approval channel failed"
            decision = bandoneon.Refuse(f"The approval request for {request.shown} could not reach a person ({why}), so it did not run (no answer means no). Tell the user.")
        fields = {"error": f"{type(error).__name__}: {error}"} if error is not None else {}
        if not self._record(run.agent, "approval", **record, outcome=outcome, by=by, note=note, waited_seconds=waited, **fields) and decision is None:
            outcome, decision = "unrecorded", self._unrecorded(request.shown)
        await run.emit(ApprovalAnswered(run.run_id, request.id, call, outcome, by, note))
        return decision, True

    async def _wait(self, request: ApprovalRequest) -> tuple[str, Answer | None, BaseException | None]:
        """Race the person's answer against the timeout and a correction."""
        loop = asyncio.get_running_loop()
        steered = asyncio.Event()
        waiter = (loop, steered)
        with self._lock:
            self._waiters.add(waiter)
            if self._corrections:
                steered.set()
        approval = asyncio.ensure_future(self.channel.approve(request))
        steering = asyncio.ensure_future(steered.wait())
        try:
            done, _ = await asyncio.wait({approval, steering}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            with self._lock:
                self._waiters.discard(waiter)
            steering.cancel()
            if not approval.done():
                approval.cancel()
            await asyncio.gather(approval, steering, return_exceptions=True)
        if approval in done:
            try:
                return "answered", as_answer(approval.result()), None
            except Exception as exc:  # a broken channel or callback: deny, and log it
                return "error", None, exc
        if steering in done:
            return "steered", None, None
        return "timeout", None, None

    @staticmethod
    def _denied(shown: str, note: str) -> bandoneon.Refuse:
        said = f' They said: "{note}".' if note else ""
        return bandoneon.Refuse(f"The person said no to {shown}; it did not run.{said} Ask them what to do instead, or do something else.")

    # ---------------------------------------------------------------- pause and resume

    def _resumed_answer(self, run: RunContext, call: bandoneon.ToolCall, tool: str, arguments: dict[str, Any]) -> Answer | bandoneon.Refuse | bandoneon.Respond | None:
        """The recorded answer for this very call, used once, and at most once even across a
        crash: an approved call is marked as started in the pause file before it runs and
        its result is kept there when it returns; the file is consumed only at the end of the
        run (after the session saved the result). A later process that finds the call started
        but not finished does not run it again (it may have run); one that finds its result
        answers with it."""
        if not self.pause_file:
            return None
        pending = read_pending(self.pause_file)
        if pending is None or not pending.is_answered or not pending.matches(tool, arguments):
            return None
        assert pending.answer is not None
        if "result" in pending.answer:
            consume_pending(self.pause_file)
            return bandoneon.Respond(str(pending.answer["result"]), is_error=bool(pending.answer.get("is_error")))
        if "started_at" in pending.answer:
            consume_pending(self.pause_file)
            return bandoneon.Refuse(
                f"{pending.shown} was approved and started in an earlier process that stopped before it finished, so it may "
                "have taken effect. It was not run again: check whether it did before asking for it again."
            )
        if not pending.approved:
            consume_pending(self.pause_file)
        elif not claim_once(pending.answer):
            consume_pending(self.pause_file)
            return bandoneon.Refuse(
                f"The approval of {pending.shown} in {self.pause_file} was already used once, so {pending.tool} did not run "
                "again. Ask for a new approval if it must run again."
            )
        else:
            write_pending(self.pause_file, attrs.evolve(pending, answer={**pending.answer, "started_at": now()}))
            self._state(run).setdefault("resumed_calls", set()).add(call.id)
        return Answer(pending.approved, str(pending.answer.get("by", "")), str(pending.answer.get("note", "")))

    @bandoneon.hookimpl(trylast=True)
    def after_tool_execution(self, run: RunContext, call: bandoneon.ToolCall, result: bandoneon.ToolResult) -> None:
        """A resumed approved call returned: keep its result in the pause file (see ``_resumed_answer``)."""
        if not self.pause_file or call.id not in self._state(run).get("resumed_calls", ()):
            return None
        pending = read_pending(self.pause_file)
        if pending is not None and pending.answer is not None:
            write_pending(self.pause_file, attrs.evolve(pending, answer={**pending.answer, "result": result.content, "is_error": result.is_error}))
        return None

    @bandoneon.hookimpl
    def after_run(self, run: RunContext) -> None:
        """The run that used a resumed approval is over (its turns are saved): the pause file is used up."""
        if self.pause_file and self._state(run).get("resumed_calls"):
            consume_pending(self.pause_file)

    def resume_prompt(self) -> str | None:
        """The message that resumes a paused run once its approval is answered; None before that."""
        if not self.pause_file:
            return None
        pending = read_pending(self.pause_file)
        if pending is None or not pending.is_answered:
            return None
        assert pending.answer is not None
        note = pending.answer.get("note") or ""
        said = f' They said: "{note}".' if note else ""
        if pending.approved:
            return f"The person has approved {pending.shown}.{said} Call {pending.tool} again with exactly those arguments to carry it out."
        return f"The person said no to {pending.shown}.{said} Do not call it; do something else or ask them what to do."

    # ---------------------------------------------------------------- escalate

    async def ask(self, run: RunContext, question: str) -> str:
        """Ask a person (the ``ask_human`` tool); on timeout or failure, the default answer."""
        item = Question(uuid.uuid4().hex[:12], run.run_id, question)
        started = time.monotonic()
        answer: str | None = None
        error: BaseException | None = None
        try:
            if self.ask_timeout is None:
                answer = await self.channel.ask(item)
            else:
                answer = await asyncio.wait_for(self.channel.ask(item), self.ask_timeout)
            outcome = "answered"
        except TimeoutError:
            outcome = "timeout"
        except Exception as exc:  # a broken channel: the model gets the default, the log gets the error
            outcome, error = "error", exc
            _log_channel_error("the question channel failed", exc)
        fields = {"error": f"{type(error).__name__}: {error}"} if error is not None else {}
        self._record(run.agent, "question", run_id=run.run_id, question_id=item.id, question=question, outcome=outcome, answer=answer,
                     waited_seconds=round(time.monotonic() - started, 3), **fields)
        if answer is None:
            why = f"no one answered within {self.ask_timeout:g} seconds" if outcome == "timeout" else "the question could not reach a person"
            return f"No answer ({why}). {self.ask_default}"
        return answer.strip() or "The person answered with nothing."

    # ---------------------------------------------------------------- reviews that ran out

    @bandoneon.hookimpl
    async def review_exhausted(self, findings: Sequence[str], task: str, rounds: int, run_id: str = "") -> Answer | None:
        """Hand work whose review rounds ran out with ``findings`` open to a person, through the
        approval channel (level 12: "two or three rounds, then hand it to a person").

        Returns the person's ``Answer``: ``approved`` accepts the work as it is; not approved,
        its ``note`` is their correction (empty: they gave none). A correction queued with
        ``steer`` while waiting is taken as the correction. None when nobody answered in
        ``timeout`` or the channel failed: the work stays open, never silently accepted.
        """
        listed = "\n".join(f"  - {finding}" for finding in findings)
        shown = f"review of {task[:200]!r} after {rounds} fix round(s), still open:\n{listed}"
        request = ApprovalRequest(
            uuid.uuid4().hex[:12], run_id, "review", {"findings": list(findings), "task": task}, shown,
            "the review rounds ran out with findings open: accept the work as it is, or say what to fix", kind="review",
        )
        started = time.monotonic()
        outcome, answer, error = await self._wait(request)
        if outcome == "steered":
            answer = Answer(False, "steering", self._take_corrections() or "")
        elif outcome == "answered" and answer is not None:
            outcome = "accepted" if answer.approved else "corrected"
        fields = {"error": f"{type(error).__name__}: {error}"} if error is not None else {}
        if error is not None:
            _log_channel_error("the approval channel failed for a review", error)
        self._record(None, "review", run_id=run_id, request_id=request.id, findings=list(findings), outcome=outcome,
                     by=answer.by if answer else "", note=answer.note if answer else "", waited_seconds=round(time.monotonic() - started, 3), **fields)
        return answer

    # ---------------------------------------------------------------- audit

    def _record(self, agent: bandoneon.Agent | None, kind: str, **fields: Any) -> bool:
        """Append to the audit log, masked by the agent's rules (guard, policy packs) like every
        store; False (and an error in the log) when it cannot be written."""
        if self._audit is None:
            return True
        try:
            self._audit.write(kind, **(agent.redact(fields) if agent is not None else fields))
        except OSError:
            log.exception("human: the audit log %s cannot be written", self.audit_log)
            return False
        return True

    def _unrecorded(self, shown: str) -> bandoneon.Refuse:
        """An approval the audit log cannot record is no approval: fail closed, and say so."""
        return bandoneon.Refuse(
            f"{shown} was approved, but the approval could not be written to the audit log ({self.audit_log}), so it did not "
            "run: an unrecorded approval is refused. Tell the user the audit log must be fixed."
        )


def _log_channel_error(what: str, error: BaseException | None) -> None:
    """A channel with no one to ask is one line (it said why); a broken one, its traceback."""
    if isinstance(error, NoOneToAsk):
        log.warning("human: %s: %s", what, error)
    else:
        log.error("human: %s: %s", what, error, exc_info=error)
