"""The Celery backend on a local cluster of one machine: redis-server and workers on 127.0.0.1,
started and stopped by the tests. Skipped (with the reason) without redis-server or Celery."""

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bandoneon_evals import Case, run_eval
from bandoneon_evals.celery_backend import CeleryBackend

HERE = Path(__file__).parent

pytestmark = [
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server is not installed (apt-get install redis-server; .ci/run installs it)"),
]
celery = pytest.importorskip("celery", reason="Celery is not installed: pip install 'bandoneon-evals[celery]'")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(predicate, what, limit=30.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


@pytest.fixture
def redis_url():
    port = free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def answers():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    try:
        wait_for(answers, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(10)


class Workers:
    def __init__(self, broker, flag_dir, visibility_timeout):
        self.env = {
            **os.environ,
            "BANDONEON_EVALS_BROKER": broker,
            "BANDONEON_EVALS_VISIBILITY_TIMEOUT": str(visibility_timeout),
            "EVALS_TEST_FLAG_DIR": str(flag_dir),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
        }
        self.processes: list[subprocess.Popen] = []

    def start(self):
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "bandoneon_evals.celery_app", "worker", "--pool", "solo", "--concurrency", "1",
             "-Q", "bandoneon_evals", "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "WARNING"],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.processes.append(process)
        return process

    def stop(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait(10)


@pytest.fixture
def workers(redis_url, tmp_path):
    made = []

    def factory(visibility_timeout=3600):
        group = Workers(redis_url, tmp_path, visibility_timeout)
        made.append(group)
        return group

    yield factory
    for group in made:
        group.stop()


@pytest.mark.slow
def test_cases_run_on_celery_workers_and_score_like_in_process(redis_url, workers, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    import evals_factories

    group = workers()
    group.start()
    group.start()
    cases = [Case(f"c{n}", f"look at hole {n}" if n % 2 else f"hole {n}", {"contains": f"hole {n}", "tools": ["look"] if n % 2 else []}) for n in range(6)]
    backend = CeleryBackend(redis_url, make_agent="evals_factories:make_agent", scorers="evals_factories:SCORERS")
    remote = asyncio.run(run_eval(cases, None, evals_factories.SCORERS, repeats=2, backend=backend, progress=False))
    local = asyncio.run(run_eval(cases, evals_factories.make_agent, evals_factories.SCORERS, repeats=2, progress=False))
    assert [(r.case_id, r.repeat, r.status, r.output, r.tool_calls) for r in remote.runs] == [(r.case_id, r.repeat, r.status, r.output, r.tool_calls) for r in local.runs]
    assert remote.pass_rate == 1.0 and len(remote.runs) == 12


@pytest.mark.slow
def test_a_worker_that_dies_mid_case_does_not_lose_the_case(redis_url, workers, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(HERE))
    import evals_factories

    group = workers(visibility_timeout=1)
    first = group.start()
    backend = CeleryBackend(redis_url, make_agent="evals_factories:make_slow_agent", scorers="evals_factories:CONTAINS_ONLY", visibility_timeout=1)

    async def scenario():
        eval_task = asyncio.create_task(run_eval([Case("hole-1", "hole 1", {"contains": "hole 1"})], None, evals_factories.CONTAINS_ONLY, backend=backend, progress=False))
        flag = tmp_path / "started"
        while not flag.exists():  # the case is running on the first worker
            await asyncio.sleep(0.05)
        assert int(flag.read_text()) == first.pid
        first.send_signal(signal.SIGKILL)  # the machine dies mid-case
        first.wait(10)
        group.start()  # once the visibility timeout has passed, its sweep gives the case back
        return await asyncio.wait_for(eval_task, 60)

    report = asyncio.run(scenario())
    (run,) = report.runs
    assert run.status == "passed" and run.output == "the answer is hole 1"


def test_a_factory_that_is_not_an_import_path_is_refused_before_anything_is_sent(redis_url):
    import bandoneon

    with pytest.raises(bandoneon.ConfigError, match="package.module:name"):
        CeleryBackend(redis_url, make_agent="make_agent", scorers="evals_factories:SCORERS")
