"""Scale-out: run the case runs of an eval on Celery workers (extra ``bandoneon-evals[celery]``).

Why Celery and not Ray (measured here, see ENVIRONMENT.md): Celery 5.7 with a Redis broker is
light to deploy (``redis-server`` from the distribution plus ``pip install celery[redis]``),
~3 ms per task round trip and 1,000 tasks in ~2 s — nothing next to a model call — and it
redelivers a task whose worker died when tasks are acknowledged late. Ray is faster per task
(1,000 in ~0.5 s) but costs a 285 MB install, ~2 s to start and ~0.5 GB of daemons per
machine; an eval's tasks are seconds-long model runs, so Ray's speed buys nothing here.

What crosses the wire is data only: the case (JSON), an *import path* to the ``make_agent``
factory and one to the scorers (``module:attr``), the repeat number and the timeout. The
worker imports them, so the factory must be importable on every worker (a closure cannot be).

Not losing a case: tasks are ``acks_late`` (acknowledged after they finish) and
``reject_on_worker_lost`` (a pool child that dies puts the task back), the worker takes one
task at a time (``prefetch_multiplier=1``), and with Redis a message whose worker vanished
is redelivered once ``visibility_timeout`` has passed — so that timeout must be longer than
the longest case; by default it is ``2 × timeout + 60`` seconds (3600 without a timeout).
The worker reads it from ``BANDONEON_EVALS_VISIBILITY_TIMEOUT``: set the same value there.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

import bandoneon

from .dataset import Case
from .runner import CaseRun, Progress, run_case

__all__ = ["TASK_NAME", "CeleryBackend", "load_scorers", "make_app"]

TASK_NAME = "bandoneon_evals.run_case"
QUEUE = "bandoneon_evals"


def load_scorers(path: str) -> list[Any]:
    """Scorers from an import path: a list of scorers, or a function with no arguments returning one."""
    value = bandoneon.import_object(path, what="scorers")
    if callable(value) and not hasattr(value, "score"):
        value = value()
    if hasattr(value, "score"):
        return [value]
    if isinstance(value, (list, tuple)):
        return list(value)
    raise bandoneon.ConfigError(f"{path!r} is not a scorer, a list of scorers or a function returning one")


def _celery() -> Any:
    try:
        import celery
    except ImportError:
        raise bandoneon.ConfigError("the Celery backend needs Celery: pip install 'bandoneon-evals[celery]'") from None
    return celery


def make_app(broker: str, result_backend: str | None = None, *, visibility_timeout: float = 3600) -> Any:
    """A Celery app with the settings that keep cases from being lost, and the eval task."""
    celery = _celery()
    app = celery.Celery("bandoneon_evals", broker=broker, backend=result_backend or broker)
    transport = {"visibility_timeout": visibility_timeout, "unacked_restore_interval": 1, "unacked_restore_throttle": 1}
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_default_queue=QUEUE,
        broker_transport_options=transport,
        result_backend_transport_options=transport,
        broker_connection_retry_on_startup=True,
        result_expires=24 * 3600,
        worker_hijack_root_logger=False,
    )

    @app.task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=True)
    def run_case_task(make_agent_path: str, scorers_path: str, case: dict[str, Any], repeat: int, timeout: float | None) -> dict[str, Any]:
        make_agent = bandoneon.import_object(make_agent_path, what="agent factory")
        scorers = load_scorers(scorers_path)
        result = asyncio.run(run_case(Case.from_json(case), make_agent, scorers, repeat=repeat, timeout=timeout))
        return result.to_json()

    return app


def worker_app_from_env() -> Any:
    """The app a worker process runs (``celery -A bandoneon_evals.celery_app worker``)."""
    broker = os.environ.get("BANDONEON_EVALS_BROKER", "redis://127.0.0.1:6379/0")
    visibility = float(os.environ.get("BANDONEON_EVALS_VISIBILITY_TIMEOUT", "3600"))
    return make_app(broker, os.environ.get("BANDONEON_EVALS_RESULT_BACKEND"), visibility_timeout=visibility)


class CeleryBackend:
    """Send each case run to Celery workers and gather the results.

    ``make_agent`` and ``scorers`` are import paths (``module:attr``); they are imported here
    too, at once, so a typo fails before a thousand tasks are sent.
    """

    def __init__(self, broker: str, *, make_agent: str, scorers: str, result_backend: str | None = None, visibility_timeout: float | None = None, poll_interval: float = 0.05):
        bandoneon.import_object(make_agent, what="agent factory")
        load_scorers(scorers)
        self.broker = broker
        self.result_backend = result_backend
        self.make_agent = make_agent
        self.scorers = scorers
        self.visibility_timeout = visibility_timeout
        self.poll_interval = poll_interval

    async def run(self, jobs: Sequence[tuple[Case, int]], *, timeout: float | None, progress: Progress | None) -> list[CaseRun]:
        visibility = self.visibility_timeout or (2 * timeout + 60 if timeout else 3600)
        app = make_app(self.broker, self.result_backend, visibility_timeout=visibility)
        try:
            pending = {
                app.send_task(TASK_NAME, args=(self.make_agent, self.scorers, case.to_json(), repeat, timeout), queue=QUEUE): (case, repeat)
                for case, repeat in jobs
            }
            runs: list[CaseRun] = []
            while pending:
                for handle in [h for h in pending if h.ready()]:
                    case, repeat = pending.pop(handle)
                    run = self._outcome(handle, case, repeat)
                    runs.append(run)
                    if progress is not None:
                        progress.update(run)
                if pending:
                    await asyncio.sleep(self.poll_interval)
            return runs
        finally:
            app.close()

    @staticmethod
    def _outcome(handle: Any, case: Case, repeat: int) -> CaseRun:
        try:
            return CaseRun.from_json(handle.get(propagate=True, disable_sync_subtasks=False))
        except Exception as exc:  # the task itself failed on the worker (import error, crash)
            print(bandoneon.for_terminal(f"bandoneon eval: case {case.id!r} run {repeat} failed on the worker: {exc}"), file=sys.stderr)
            return CaseRun(case.id, repeat, "errored", stop="error", error=f"worker: {type(exc).__name__}: {exc}")
        finally:
            handle.forget()
