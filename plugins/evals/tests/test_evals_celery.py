"""The Celery backend on a local cluster of one machine: redis-server and workers on 127.0.0.1,
started and stopped by the tests. Skipped (with the reason) without redis-server or Celery."""

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from bandoneon.cli import main
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


@pytest.fixture
def cli_worker(redis_url, tmp_path):
    """``bandoneon eval worker --broker URL`` in its own process (prefork pool, as users run it)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    command = "import sys; from bandoneon.cli import main; sys.exit(main(sys.argv[1:]))"
    log = (tmp_path / "worker.log").open("wb")
    process = subprocess.Popen([sys.executable, "-c", command, "eval", "worker", "--broker", redis_url, "--visibility-timeout", "60"], env=env, stdout=log, stderr=log)
    yield process
    process.terminate()  # warm shutdown: the worker stops its pool children itself
    try:
        process.wait(20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
    log.close()


def cli_in_thread(argv, limit=60.0):
    """``main(argv)`` with a deadline, so a worker that never answers fails the test instead of hanging it."""
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("code", main(argv)), daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"`bandoneon {' '.join(argv)}` did not finish in {limit:g}s (is the worker up?)"
    return outcome["code"]


@pytest.mark.slow
def test_the_cli_runs_an_eval_on_a_bandoneon_eval_worker_and_gates_on_the_pass_rate(redis_url, cli_worker, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(HERE))
    dataset = tmp_path / "golf.jsonl"
    dataset.write_text(
        json.dumps({"id": "a", "input": "look at hole 1", "expected": {"contains": "hole 1", "tools": ["look"]}}) + "\n"
        + json.dumps({"id": "b", "input": "hole 2", "expected": {"contains": "hole 9", "tools": []}}) + "\n"
    )
    report = tmp_path / "remote.json"
    argv = ["eval", "run", str(dataset), "--agent", "evals_factories:make_pid_agent", "--scorer", "contains", "--scorer", "trajectory:set",
            "--backend", "celery", "--broker", redis_url, "--json", str(report), "--no-progress"]
    assert cli_in_thread([*argv, "--min-pass-rate", "0.9"]) == 1
    captured = capsys.readouterr()
    assert "pass rate 50% (1 passed, 1 failed, 0 errored of 2 runs)" in captured.out
    assert "below --min-pass-rate 90.0%" in captured.err
    runs = [run for case in json.loads(report.read_text())["cases"] for run in case["runs"]]
    assert [(r["case_id"], r["status"], r["tool_calls"]) for r in runs] == [("a", "passed", ["look"]), ("b", "failed", [])]
    pids = {int(r["output"].rsplit("pid ", 1)[1].rstrip(")")) for r in runs}
    assert os.getpid() not in pids and cli_worker.pid not in pids  # run by the worker's pool, not here
    assert cli_in_thread([*argv, "--min-pass-rate", "0.5"]) == 0
