"""The sections of the benchmark suite. Each returns a markdown section with its figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

import bandoneon
import scenarios
from mock_server_process import serving
from timing import compare_async, compare_sync, ms, us

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers" / "venv"


@attrs.frozen
class Scale:
    iterations: int
    rounds: int
    concurrent: int
    http_iterations: int

    #: New interpreter processes a section measures in, one after another (see ``loop_overhead``).
    processes: int

    @classmethod
    def full(cls) -> Scale:
        return cls(iterations=1000, rounds=9, concurrent=10_000, http_iterations=200, processes=5)

    @classmethod
    def quick(cls) -> Scale:
        return cls(iterations=200, rounds=3, concurrent=200, http_iterations=50, processes=2)


def _verdict(value: float, target: float, smaller_is_better: bool = True) -> str:
    met = value <= target if smaller_is_better else value >= target
    return "met" if met else f"**missed** by {value / target:.2f}×" if smaller_is_better else f"**missed** ({value:.2f} < {target})"


#: Issue 19 set its targets in µs on a machine where the bare loop's 2-turn run took 4.76 µs (its
#: 2,164 µs were "455× the bare loop"). The same code runs 2.5× slower on some of these VMs than
#: on others, so each such target is also judged scaled by this run's bare loop (the loop
#: section's, measured first): the ratio to the bare loop the issue asks for, in µs.
BARE_LOOP_WHEN_SET = 2164e-6 / 455
_bare_loop_here: list[float] = []


def _target(value: float, target: float) -> str:
    """``target ≤ …: met`` for a target set in µs, and the same scaled to this machine."""
    said = f"target ≤ {us(target)}: {_verdict(value, target)}"
    if not _bare_loop_here:
        return said
    bare = _bare_loop_here[0]
    scaled = target * bare / BARE_LOOP_WHEN_SET
    return f"{said}; scaled to this machine (bare loop {us(bare)}, {us(BARE_LOOP_WHEN_SET)} when set): ≤ {us(scaled)}: {_verdict(value, scaled)}"


#: Issue 19's targets for a plugin alone in an agent (what it adds to the no-plugin 2-turn run).
TRACING_JSONL = "tracing, exporting to a JSONL file"
PLUGIN_TARGETS = {"skills": 20e-6, TRACING_JSONL: 25e-6, "guard": 8e-6, "plan": 8e-6, "subagents": 8e-6, "compaction": 8e-6}


# ---------------------------------------------------------------- 1. loop overhead


async def _all_installed_plugins() -> tuple[list[object], list[str]]:
    """A fresh instance of every installed plugin that works with its default options."""
    working, skipped = [], []
    for name in sorted(bandoneon.installed_plugins()):
        try:
            agent = scenarios.bandoneon_agent([bandoneon.build_plugin(bandoneon.load_plugin(name))])
            await scenarios.bandoneon_run(agent)
            await agent.aclose()
        except Exception as exc:  # needs options or a deployment (a scope, a server): not switched on blindly
            skipped.append(f"{name} ({type(exc).__name__}: {str(exc)[:60]})")
            continue
        working.append(name)
    return [bandoneon.build_plugin(bandoneon.load_plugin(name)) for name in working], skipped


# The loop section's contenders.
BARE, DEFAULTS, NO_PLUGINS = "bare level-2 loop", "bandoneon, default plugins", "bandoneon, no plugins"
EVERYTHING, ALL_BUT_SESSIONS = "bandoneon, every installed plugin active", "bandoneon, every installed plugin but sessions"
#: With every plugin active, sessions' own floor: the no-plugin run, then one append and fdatasync.
FLOOR = "no plugins, then one append and fdatasync (the floor)"


def loop_overhead(scale: Scale) -> str:
    """The loop section, measured in ``scale.processes`` new interpreters one after another.

    One interpreter process can run the same code a third slower than the next (on these VMs the
    no-plugin run measured 30, 30, 41 and 48 µs in four processes differing only in their hash
    seed), and every contender of one process shares its luck. So each process measures every
    figure side by side, and the section reports, for each figure, the median across processes
    (a plugin's cost: in each process, what it adds to the no-plugin run of the same rounds)."""
    measured = [_measure_in_new_process("loop", scale) for _ in range(scale.processes)]
    return _render_loop(measured)


def _measure_in_new_process(name: str, scale: Scale) -> dict[str, Any]:
    completed = subprocess.run([sys.executable, str(HERE / "measure.py"), name, json.dumps(attrs.asdict(scale))], capture_output=True, text=True, check=False, timeout=1200)
    if completed.returncode != 0:
        raise RuntimeError(f"measuring {name!r} in a new process failed:\n{completed.stderr[-2000:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _across(measured: list[dict[str, Any]], figure: Any) -> float:
    """The median across processes of ``figure(one process's figures)``."""
    return statistics.median(figure(one) for one in measured)


def loop_figures(scale: Scale) -> dict[str, Any]:
    """Every figure of the loop section from this process (``benchmarks/measure.py loop``):
    the awaited runs in one event loop, then ``run_sync``, which makes its own."""
    with _scratch_sessions():
        figures, defaults = asyncio.run(_awaited_loop_figures(scale))
    figures["run_sync"] = compare_sync({"run_sync": lambda: scenarios.bandoneon_run_sync(defaults)}, iterations=scale.iterations, rounds=scale.rounds).median("run_sync")
    return figures


async def _awaited_loop_figures(scale: Scale) -> tuple[dict[str, Any], bandoneon.Agent]:
    defaults = scenarios.bandoneon_agent(None)
    bare_core = scenarios.bandoneon_agent([])
    everything, skipped = await _all_installed_plugins()
    try:
        all_active = scenarios.bandoneon_agent(everything)
    except Exception as exc:
        all_active, skipped = None, skipped + [f"all-together ({exc})"]
    contenders = {
        BARE: scenarios.bare_loop,
        DEFAULTS: lambda: scenarios.bandoneon_run(defaults),
        NO_PLUGINS: lambda: scenarios.bandoneon_run(bare_core),
    }
    with contextlib.ExitStack() as cleanup:
        if all_active is not None:
            from bandoneon_sessions.stores import default_sessions_path

            contenders[EVERYTHING] = lambda: scenarios.bandoneon_run(all_active)
            # The floor its target is judged by, side by side with it: this disk's fdatasync
            # costs differ by half from one minute to the next. On the disk the sessions
            # plugin writes to by default (where the agent above writes).
            folder = Path(cleanup.enter_context(tempfile.TemporaryDirectory(dir=default_sessions_path())))
            fd = os.open(folder / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            cleanup.callback(os.close, fd)
            contenders[FLOOR] = _then_fdatasync(lambda: scenarios.bandoneon_run(bare_core), fd)
            tight = _fdatasync_floor(folder)
        # Issue 19 target 4 leaves sessions out (its figure is the disk's: the sessions section).
        without_sessions = [p for p in everything if bandoneon.plugin_name(p) != "sessions"]
        if len(without_sessions) < len(everything):
            cpu_bound = scenarios.bandoneon_agent([bandoneon.build_plugin(type(p)) for p in without_sessions])
            contenders[ALL_BUT_SESSIONS] = lambda: scenarios.bandoneon_run(cpu_bound)
        comparison = await compare_async(contenders, iterations=scale.iterations, rounds=scale.rounds)
    figures: dict[str, Any] = {
        "medians": comparison.medians(),
        "ratios": {name: comparison.ratio(name, BARE) for name in contenders},
        "alone": await _each_plugin_alone(everything, scale) if everything else {},
        "defaults": [bandoneon.plugin_name(p) for p in defaults.plugins],
        "all_active": [bandoneon.plugin_name(p) for p in all_active.plugins] if all_active is not None else [],
        "skipped": skipped,
    }
    if all_active is not None:
        figures["fdatasync_floor"] = tight
        figures["fdatasync_between_runs"] = comparison.difference(FLOOR, NO_PLUGINS)
        await all_active.aclose()
    return figures, defaults


@contextlib.contextmanager
def _scratch_sessions() -> Iterator[Path]:
    """A scratch folder for the sessions these agents write with default options, on the disk
    they would write to (thousands of runs: megabytes, not to be left in the user's sessions)."""
    from bandoneon_sessions.stores import default_sessions_path

    home = default_sessions_path()
    home.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("BANDONEON_SESSIONS_PATH")
    with tempfile.TemporaryDirectory(dir=home, prefix="benchmark-") as folder:
        os.environ["BANDONEON_SESSIONS_PATH"] = folder
        try:
            yield Path(folder)
        finally:
            if before is None:
                del os.environ["BANDONEON_SESSIONS_PATH"]
            else:
                os.environ["BANDONEON_SESSIONS_PATH"] = before


async def _each_plugin_alone(plugins: list[object], scale: Scale) -> dict[str, dict[str, float]]:
    """Each plugin alone in an agent (fresh instances), and no plugins, in one interleaved
    comparison of short blocks (a slow stretch of a shared machine then hits every contender):
    each plugin's median run, and what it adds (the median over rounds of its round's median
    minus the no-plugin run's)."""
    agents = {NO_PLUGINS: scenarios.bandoneon_agent([])}
    for plugin in plugins:
        agents[bandoneon.plugin_name(plugin)] = scenarios.bandoneon_agent([bandoneon.build_plugin(type(plugin))])
    with tempfile.TemporaryDirectory() as folder:
        tracing = next((type(p) for p in plugins if bandoneon.plugin_name(p) == "tracing"), None)
        if tracing is not None:  # issue 19 sets tracing's target with its JSONL exporter on
            agents[TRACING_JSONL] = scenarios.bandoneon_agent([tracing(jsonl=str(Path(folder) / "traces.jsonl"))])
        contenders = {name: (lambda agent=agent: scenarios.bandoneon_run(agent)) for name, agent in agents.items()}
        comparison = await compare_async(contenders, iterations=max(20, scale.iterations // 25), rounds=scale.rounds * 5, warmup=20)
        for agent in agents.values():
            await agent.aclose()
    return {name: {"median": comparison.median(name), "added": comparison.difference(name, NO_PLUGINS)} for name in agents if name != NO_PLUGINS}


def _render_loop(measured: list[dict[str, Any]]) -> str:
    first = measured[0]
    contenders = [name for name in first["medians"] if all(name in one["medians"] for one in measured)]
    median = {name: _across(measured, lambda one, name=name: one["medians"][name]) for name in contenders}
    _bare_loop_here[:] = [median[BARE]]
    lines = [
        "## Loop overhead: 2-turn run on an in-process fake model (awaited in a running loop)\n",
        f"Each figure is the median across {len(measured)} new interpreter processes of that process's median (contenders interleaved round by round within each process).\n",
        "| contender | median per run | ratio to the bare loop |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {us(median[name])} | {_across(measured, lambda one, name=name: one['ratios'][name]):.1f}× |" for name in contenders]
    lines.append("")
    lines.append(f"- default plugins active: {', '.join(first['defaults']) or 'none'}")
    if first["all_active"]:
        lines.append(f"- every installed plugin active: {', '.join(first['all_active'])}")
    if first["skipped"]:
        lines.append(f"- not activatable with default options (skipped): {', '.join(first['skipped'])}")
    if first["alone"]:
        lines.append(
            "\nWhat each installed plugin adds on its own (alone in an agent, same scenario; in each process the median "
            "over rounds of its run minus the no-plugin run of the same round, then the median across processes):\n"
        )
        lines.append("| plugin | median per run | added to no plugins |\n|---|---|---|")
        rows = [
            (
                name,
                _across(measured, lambda one, name=name: one["alone"][name]["median"]),
                _across(measured, lambda one, name=name: one["alone"][name]["added"]),
            )
            for name in first["alone"]
        ]
        lines += [f"| {name} | {us(value)} | {us(added)} |" for name, value, added in sorted(rows, key=lambda row: row[2])]
        lines.append("")
        lines += [f"- {name} adds {us(added)}; {_target(added, PLUGIN_TARGETS[name])}" for name, _, added in rows if name in PLUGIN_TARGETS]
    ratio = _across(measured, lambda one: one["ratios"][DEFAULTS])
    lines.append(f"- default plugins: {_target(median[DEFAULTS], 100e-6)}; target ratio to the bare loop < 30×: {_verdict(ratio, 30)}")
    if ALL_BUT_SESSIONS in median:
        value = median[ALL_BUT_SESSIONS]
        lines.append(f"- every installed plugin active but sessions: {us(value)}; {_target(value, 250e-6)}")
    if EVERYTHING in median and ALL_BUT_SESSIONS in median:
        # Sessions' own target (durability "turn", its default: two fdatasyncs per run), on top,
        # against the floor measured beside it (FLOOR) and the tight-loop floor.
        floor = _across(measured, lambda one: one["fdatasync_between_runs"])
        tight = _across(measured, lambda one: one["fdatasync_floor"])
        target, strict = 250e-6 + 1.2 * 2 * floor + 30e-6, 250e-6 + 1.2 * 2 * tight + 30e-6
        lines.append(
            f"- with sessions too: {us(median[EVERYTHING])}; target ≤ 250 µs + sessions' (1.2 × 2 × the fdatasync floor between runs, side by side, of "
            f"{us(floor)} + 30 µs) = {us(target)}: {_verdict(median[EVERYTHING], target)}; with the tight-loop floor of "
            f"{us(tight)}: {us(strict)}: {_verdict(median[EVERYTHING], strict)}"
        )
    run_sync = _across(measured, lambda one: one["run_sync"])
    lines.append(f"- `run_sync` (default plugins): {us(run_sync)} per run; {_target(run_sync, 120e-6)}")
    return "\n".join(lines) + "\n"


async def typed_output(scale: Scale) -> str:
    """The 2-turn run asking for a small attrs class (native mode) against the same run without."""
    plain, typed = scenarios.bandoneon_agent(None), scenarios.typed_agent(None)
    contenders = {"text answer": lambda: scenarios.bandoneon_run(plain), "output_type=Forecast": lambda: scenarios.typed_run(typed)}
    comparison = await compare_async(contenders, iterations=scale.iterations, rounds=scale.rounds)
    medians = comparison.medians()
    ratio = comparison.ratio("output_type=Forecast", "text answer")
    return (
        "## Typed answers: the 2-turn run with `output_type` (a 2-field attrs class, checked) and without\n\n"
        "| contender | median per run |\n|---|---|\n"
        + "".join(f"| {name} | {us(value)} |\n" for name, value in medians.items())
        + f"\n- ratio typed / text: {ratio:.2f}×; target ≤ 1.2×: {_verdict(ratio, 1.2)}\n"
    )


# ---------------------------------------------------------------- 1a. JSON limits

#: A chat-completion body as the testing kit's server sends it for the run's first turn.
_REPLY_BODY = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "get_forecast", "arguments": scenarios.ARGUMENTS}},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
).encode()


async def json_limits(scale: Scale) -> str:
    """What parsing within the depth and size limits adds to a 2-turn run: ``loads_bounded``
    against plain ``json.loads`` on the documents a run parses, over the run's own time (in
    process the run parses one document, the tool's arguments; over HTTP also a reply body per turn)."""
    from bandoneon.jsonlimits import loads_bounded

    arguments = scenarios.ARGUMENTS
    parsing = compare_sync(
        {
            "json.loads, arguments": lambda: json.loads(arguments),
            "loads_bounded, arguments": lambda: loads_bounded(arguments),
            "json.loads, reply body": lambda: json.loads(_REPLY_BODY),
            "loads_bounded, reply body": lambda: loads_bounded(_REPLY_BODY),
        },
        iterations=scale.iterations * 10,
        rounds=scale.rounds,
    )
    agent = scenarios.bandoneon_agent(None)
    run = (await compare_async({"run": lambda: scenarios.bandoneon_run(agent)}, iterations=scale.iterations, rounds=scale.rounds)).median("run")
    await agent.aclose()
    added = {what: parsing.median(f"loads_bounded, {what}") - parsing.median(f"json.loads, {what}") for what in ("arguments", "reply body")}
    share = max(added["arguments"], 0.0) / run
    lines = ["## JSON limits: what parsing within the depth and size limits adds\n", "| document | `json.loads` | `loads_bounded` (default limits) | added |", "|---|---|---|---|"]
    for what, extra in added.items():
        lines.append(
            f"| {what} ({len(arguments if what == 'arguments' else _REPLY_BODY)} bytes) | {us(parsing.median(f'json.loads, {what}'))} | {us(parsing.median(f'loads_bounded, {what}'))} | {us(extra)} |"
        )
    lines.append(
        f"\n- the in-process 2-turn run (default plugins, {us(run)}) parses one argument document: the limits add {share:.1%} to it; "
        f"target under 2 %: {_verdict(share, 0.02)}. Over HTTP a run also parses a reply body per turn, against a run of milliseconds (next sections)."
    )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- 1b. sessions durability


def _fdatasync_floor(folder: Path, samples: int = 200) -> float:
    """Median seconds of appending one small line to a file and fdatasync-ing it, on this disk,
    back to back in a tight loop: a lower bound (``sessions_durability`` measures the floor its
    target uses between runs, where a program pays for the fdatasync it blocked on)."""
    path = folder / "floor.bin"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(samples):
            started = time.perf_counter()
            os.write(fd, b'{"role":"user","content":"x"}\n')
            os.fdatasync(fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(fd)
    return statistics.median(times)


#: The floor's append: one line about the size of what each of the plugin's flushes carries in
#: the 2-turn run (449 and 517 bytes under "turn", 966 under "run").
_FLOOR_LINE = b"x" * 511 + b"\n"


def _then_fdatasync(run: Callable[[], Awaitable[None]], fd: int) -> Callable[[], Awaitable[None]]:
    """``run``, then one append of ``_FLOOR_LINE`` to ``fd`` and its fdatasync, bare system calls:
    with ``run`` the no-plugin run, what a durable write costs a program between runs."""

    async def contender() -> None:
        await run()
        os.write(fd, _FLOOR_LINE)
        os.fdatasync(fd)

    return contender


#: The contenders of the sessions section that its two comparisons share or set apart.
NO_PLUGINS, OS, FLOOR_RUN = "no plugins", "sessions, durability=os", "no plugins, then one fdatasync"


async def sessions_durability(scale: Scale) -> str:
    """The sessions plugin in each durability mode, against the disk's own fdatasync floor.

    The floor is what one append and fdatasync, made with the bare system calls, add to the
    no-plugin run, measured in the same comparison. A process that blocks on the disk pays
    twice: in the call, and in the work after it, which runs slower (its caches went cold
    while the core ran the kernel's I/O path and other programs). A tight loop of fdatasyncs
    (``_fdatasync_floor``, still shown) has no work to slow down: 90-210 µs on the 2-core
    benchmark machine, where the same call after each run adds 245-310 µs, and the run's own
    work ran 36 µs slower around a 150 µs ``time.sleep`` but 7 µs around a 150 µs spin. The
    floor holds no plugin code: whatever the plugin does besides its flushes counts against it.
    ``"os"``, which waits on no disk, is compared with the no-plugin run apart from the others:
    run after a contender that waited on the disk, it read as 5 µs dearer (17 µs apart, 22 µs
    among them, on the same day), a cost of the waits before it, not of its own work.
    """
    from bandoneon_sessions import JsonlStore, Sessions

    with tempfile.TemporaryDirectory(dir=Path.cwd()) as folder:
        back_to_back = _fdatasync_floor(Path(folder))

        # Fresh reply objects each call, as a real model gives (the plugin sees the cleared
        # history as replaced and saves every message of the run), with and without the plugin.
        def agent(plugins: list[Any]) -> bandoneon.Agent:
            return bandoneon.Agent(scenarios.FreshTwoTurnModel(), tools=[scenarios.FORECAST_TOOL], plugins=plugins, context_files=False)

        agents = {NO_PLUGINS: agent([])}
        for mode in ("turn", "run", "os"):
            agents[f"sessions, durability={mode}"] = agent([Sessions(session_id="bench", store=JsonlStore(Path(folder) / mode), durability=mode)])
        contenders = {name: (lambda agent=agent: scenarios.bandoneon_run(agent)) for name, agent in agents.items()}
        unsynced = {NO_PLUGINS: contenders[NO_PLUGINS], OS: contenders.pop(OS)}
        # The floor: the no-plugin run, then the system calls alone (a file held open, no plugin code).
        floor_file = os.open(Path(folder) / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        contenders[FLOOR_RUN] = _then_fdatasync(contenders[NO_PLUGINS], floor_file)
        try:
            synced = await compare_async(contenders, iterations=max(20, scale.iterations // 50), rounds=max(5, scale.rounds * 5 // 3), warmup=10)
            # "os" waits for no disk: it is measured apart, with as many runs as the loop's
            # figures, so that no contender waiting on the disk runs before it (a wait leaves
            # the caches of whatever runs next cold: the fsyncing modes' cost, not its own).
            unsynced_comparison = await compare_async(unsynced, iterations=scale.iterations, rounds=scale.rounds)
        finally:
            os.close(floor_file)
            for agent in agents.values():
                await agent.aclose()
    floor = synced.median(FLOOR_RUN) - synced.median(NO_PLUGINS)
    lines = [
        "## Sessions: what each durability mode costs a 2-turn run\n",
        f"fdatasync floor on this disk (one {len(_FLOOR_LINE)}-byte append and fdatasync, bare system calls, added to the no-plugin run; median): {us(floor)}",
        f"(back to back in a tight loop, with no work between them: {us(back_to_back)}). "
        '"os" syncs nothing: it is compared with the no-plugin run on its own, away from the modes that wait on the disk.\n',
        "| mode | median per run | added to no plugins | fsyncs per run | target (1.2 × fsyncs × floor + 30 µs) | the same with the tight-loop floor |",
        "|---|---|---|---|---|---|",
    ]
    for mode, count in {"turn": 2, "run": 1, "os": 0}.items():
        name = f"sessions, durability={mode}"
        comparison = unsynced_comparison if name == OS else synced
        value, base = comparison.median(name), comparison.median(NO_PLUGINS)
        target, strict = 1.2 * count * floor + 30e-6, 1.2 * count * back_to_back + 30e-6
        lines.append(f"| {mode} | {us(value)} | {us(value - base)} | {count} | {us(target)}: {_verdict(value - base, target)} | {us(strict)}: {_verdict(value - base, strict)} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- 2. peers


def peers(scale: Scale) -> str:
    """The same 2-turn run in each peer framework, in its own venv, interleaved with bandoneon."""
    python = PEERS_VENV / "bin" / "python"
    if not python.exists():
        _install_peers()
    ours = HERE / "peers" / "bandoneon_2turn.py"
    scripts: dict[str, tuple[str, Path, tuple[str, ...]]] = {
        "bandoneon (default plugins)": (sys.executable, ours, ()),
        "bandoneon (new agent per run, run_sync)": (sys.executable, ours, ("--mode", "new-agent-sync")),
    }
    for script in sorted((HERE / "peers").glob("peer_*.py")):
        scripts[script.stem.removeprefix("peer_")] = (str(python), script, ())
    rounds = max(3, scale.rounds // 2)
    samples: dict[str, list[float]] = {name: [] for name in scripts}
    failures: dict[str, str] = {}
    names = list(scripts)
    for round_index in range(rounds):
        order = names[round_index % len(names) :] + names[: round_index % len(names)]
        for name in order:
            if name in failures:
                continue
            executable, script, extra = scripts[name]
            completed = subprocess.run([executable, str(script), "--iterations", str(scale.iterations), *extra], capture_output=True, text=True, timeout=600)
            if completed.returncode != 0:
                failures[name] = (completed.stderr.strip().splitlines() or ["failed"])[-1][:200]
                continue
            samples[name].append(json.loads(completed.stdout.strip().splitlines()[-1])["median_s"])
    results = {name: statistics.median(values) for name, values in samples.items() if values}
    ours = results.get("bandoneon (default plugins)")
    lines = [
        "## Against the peers: the same 2-turn fake-model run, each in its own process, interleaved\n",
        "| framework | median per run | bandoneon is faster by |",
        "|---|---|---|",
    ]
    for name, value in sorted(results.items(), key=lambda item: item[1]):
        lines.append(f"| {name} | {us(value)} | {'—' if name.startswith('bandoneon') or not ours else f'{value / ours:.1f}×'} |")
    for name, reason in failures.items():
        lines.append(f"| {name} | failed: {reason} | |")
    peer_values = [v for n, v in results.items() if not n.startswith("bandoneon")]
    if ours and peer_values:
        fastest = min(peer_values)
        lines.append(f"\n- target: at least 3× faster than the fastest peer: {fastest / ours:.1f}× → {_verdict(fastest / ours, 3, smaller_is_better=False)}")
    fresh, llm = results.get("bandoneon (new agent per run, run_sync)"), results.get("llm")
    if fresh and llm:
        lines.append(
            f"- new agent per run (`run_sync`): {us(fresh)}; {_target(fresh, 100e-6)}; "
            f"{llm / fresh:.1f}× faster than llm (which also builds its conversation per run), target ≥ 4×: {_verdict(llm / fresh, 4, smaller_is_better=False)}"
        )
    lines.append(f"- peers pinned in `benchmarks/peers/requirements.txt`, installed in `{PEERS_VENV.relative_to(HERE.parent)}`")
    return "\n".join(lines) + "\n"


def _install_peers() -> None:
    PEERS_VENV.parent.mkdir(exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(PEERS_VENV)], check=True)
    subprocess.run([str(PEERS_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "-r", str(HERE / "peers" / "requirements.txt")], check=True)


# ---------------------------------------------------------------- 3. over loopback HTTP


async def _bare_httpx_loop(client, base_url: str) -> str:
    tools = [
        {
            "type": "function",
            "function": {"name": "get_forecast", "description": "Daily forecast for one city.", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
        }
    ]

    async def chat(messages):
        response = await client.post(f"{base_url}/chat/completions", json={"model": "bench", "messages": messages, "tools": tools, "tool_choice": "auto"})
        return response.json()["choices"][0]

    return await scenarios.bare_loop(chat=chat)


def over_http(scale: Scale) -> str:
    """Measured in ``scale.processes`` new interpreters, as the loop section is (one process can
    be slower than the next, and the two contenders share its luck)."""
    measured = [_measure_in_new_process("http", scale) for _ in range(scale.processes)]
    floor = _across(measured, lambda one: one["bare"])
    ours = _across(measured, lambda one: one["bandoneon"])
    ratio = _across(measured, lambda one: one["ratio"])
    each = ", ".join(f"{one['ratio']:.2f}" for one in measured)
    return (
        "## Over loopback HTTP: the same run against the testing kit's server (in its own process)\n\n"
        f"Medians across {len(measured)} new interpreter processes; in each, the contenders alternate round by round.\n\n"
        "| contender | median per run | ratio (median of per-round ratios) |\n|---|---|---|\n"
        f"| bare httpx loop (the floor) | {ms(floor)} | 1.00× |\n"
        f"| bandoneon, default plugins | {ms(ours)} | {ratio:.2f}× |\n\n"
        f"- the processes' ratios: {each}\n"
        f"- target within 1.15× of the bare httpx loop: {_verdict(ratio, 1.15)}\n"
    )


def http_figures(scale: Scale) -> dict[str, float]:
    """The HTTP section's figures from this process (``benchmarks/measure.py http``)."""
    return asyncio.run(_http_figures(scale))


async def _http_figures(scale: Scale) -> dict[str, float]:
    import httpx

    with serving() as base_url:
        agent = bandoneon.Agent(f"openai-compatible:bench@{base_url}", tools=[scenarios.FORECAST_TOOL], context_files=False, context_window=128_000)
        async with httpx.AsyncClient(verify=False) as client:
            comparison = await compare_async(
                {
                    "bare httpx loop": lambda: _bare_httpx_loop(client, base_url),
                    "bandoneon, default plugins": lambda: scenarios.bandoneon_run(agent),
                },
                iterations=scale.http_iterations,
                rounds=scale.rounds,
                warmup=20,
            )
        await agent.aclose()
    return {
        "bare": comparison.median("bare httpx loop"),
        "bandoneon": comparison.median("bandoneon, default plugins"),
        "ratio": comparison.ratio("bandoneon, default plugins", "bare httpx loop"),
    }


# ---------------------------------------------------------------- 4. concurrency


def concurrency(scale: Scale) -> str:
    """Each contender in its own process (so peak memory is its own), alternating over rounds;
    the round with the median throughput is reported for each, and the throughput ratio is the
    median of the rounds' own ratios (a loaded machine slows a whole round, not one contender)."""
    samples: dict[str, list[dict]] = {"bare": [], "bandoneon": []}
    errors: dict[str, str] = {}
    round_ratios: list[float] = []
    for _ in range(max(1, scale.rounds // 3)):
        this_round: dict[str, float] = {}
        for contender in samples:
            completed = subprocess.run([sys.executable, str(HERE / "concurrent_runs.py"), contender, str(scale.concurrent)], capture_output=True, text=True, timeout=900)
            if completed.returncode != 0:
                errors[contender] = completed.stderr.strip()[-300:]
                continue
            samples[contender].append(json.loads(completed.stdout.strip().splitlines()[-1]))
            this_round[contender] = samples[contender][-1]["throughput"]
        if len(this_round) == 2:
            round_ratios.append(this_round["bandoneon"] / this_round["bare"])
    rows = []
    for contender, runs in samples.items():
        if not runs:
            rows.append((contender, None, errors.get(contender, "no run")))
            continue
        runs.sort(key=lambda data: data["throughput"])
        rows.append((contender, runs[len(runs) // 2], ""))
    lines = [
        f"## {scale.concurrent:,} concurrent runs in one process against the loopback server\n",
        f"Median of {max(1, scale.rounds // 3)} rounds, contenders alternating, each in its own process; the server in a third. "
        "The bare contender is an httpx loop with a client per session; bandoneon runs one agent per session with the default plugins. "
        "RSS per session: growth of the peak RSS from after a warm-up run to the end, over the sessions (agents, runs, connections, allocator slack).\n",
        "| contender | runs/s | p50 | p99 | errors | peak RSS | RSS per session |",
        "|---|---|---|---|---|---|---|",
    ]
    figures = {}
    for contender, data, error in rows:
        if data is None:
            lines.append(f"| {contender} | failed: {error} | | | | | |")
            continue
        figures[contender] = data
        lines.append(f"| {contender} | {data['throughput']:,.0f} | {ms(data['p50'])} | {ms(data['p99'])} | {data['errors']} | {data['peak_rss_mb']:.0f} MiB | {data['rss_per_session_kb']:.0f} KiB |")
    if "bare" in figures and "bandoneon" in figures:
        ratio = statistics.median(round_ratios)
        each = ", ".join(f"{value:.2f}" for value in round_ratios)
        lines.append(f"\n- throughput ratio bandoneon / bare (median of the rounds' ratios: {each}) {ratio:.2f}; target ≥ 0.8: {_verdict(ratio, 0.8, smaller_is_better=False)}")
        per_session = figures["bandoneon"]["rss_per_session_kb"]
        lines.append(f"- bandoneon {per_session:.0f} KiB per session (peak RSS growth over the sessions); target ≤ 64 KiB: {_verdict(per_session, 64)}")
        lines.append(f"- errors: bandoneon {figures['bandoneon']['errors']}, bare {figures['bare']['errors']}; target: none")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- 5. start-up


# Byte-code caching on, as users have it (some CI shells export PYTHONDONTWRITEBYTECODE).
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _in_process(code: str, runs: int = 9) -> float:
    """Median seconds of ``code``'s own measurement (it prints one float), each in a new process."""
    values = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=_ENV).stdout) for _ in range(runs)]
    return statistics.median(values)


def _importtime() -> float:
    completed = subprocess.run([sys.executable, "-X", "importtime", "-c", "import bandoneon"], capture_output=True, text=True, check=True, env=_ENV)
    for line in completed.stderr.splitlines():
        if line.rstrip().endswith("| bandoneon"):
            return int(line.split("|")[1]) / 1e6
    raise RuntimeError("bandoneon not in -X importtime output")


def _walls(codes: dict[str, str], runs: int = 21) -> dict[str, float]:
    """Median wall time of each snippet in a new interpreter, the snippets interleaved."""
    for code in codes.values():
        subprocess.run([sys.executable, "-c", code], check=True, env=_ENV)  # warm: byte-code written
    times: dict[str, list[float]] = {name: [] for name in codes}
    for _ in range(runs):
        for name, code in codes.items():
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True, env=_ENV)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


_CREATED_WITH_DEFAULTS = "agent with one tool, default plugins"


def creation_figures(scale: Scale) -> dict[str, float]:
    """Agent creation, without and with the default plugins, from this process (``measure.py creation``)."""
    return compare_sync(
        {"agent with one tool, no plugins": lambda: scenarios.bandoneon_agent([]), _CREATED_WITH_DEFAULTS: lambda: scenarios.bandoneon_agent(None)},
        iterations=max(100, scale.iterations // 5),
        rounds=scale.rounds,
    ).medians()


def startup(scale: Scale) -> str:
    walls = _walls({"pass": "pass", "deps": "import asyncio, attrs, pluggy", "bandoneon": "import bandoneon"})
    baseline = walls["pass"]
    import_wall = walls["bandoneon"] - baseline
    deps_wall = walls["deps"] - baseline
    importtime = _importtime()
    clock = "import time, bandoneon\nstarted = time.perf_counter()\n"
    discovery = _in_process(clock + "bandoneon.installed_plugins()\nprint(time.perf_counter() - started)")
    load_all = _in_process(clock + "for p in bandoneon.installed_plugins().values(): p.load()\nprint(time.perf_counter() - started)")
    creation = [_measure_in_new_process("creation", scale) for _ in range(scale.processes)]
    lines = [
        "## Start-up\n",
        "| what | time |",
        "|---|---|",
        f"| `import bandoneon` (wall, minus bare interpreter start) | {ms(import_wall)} |",
        f"| for reference, `import asyncio, attrs, pluggy` (same measure, interleaved; bandoneon loads asyncio when the first run starts) | {ms(deps_wall)} |",
        f"| `import bandoneon` (`-X importtime`, cumulative) | {ms(importtime)} |",
        f"| plugin discovery (`installed_plugins()`, {len(bandoneon.installed_plugins())} installed; once per process) | {ms(discovery)} |",
        f"| discovery and importing every installed plugin | {ms(load_all)} |",
    ]
    lines += [f"| {name} | {us(_across(creation, lambda one, name=name: one[name]))} |" for name in creation[0]]
    with_defaults = _across(creation, lambda one: one[_CREATED_WITH_DEFAULTS])
    lines.append(f"\n- target `import bandoneon` ≤ 100 ms with every plugin installed: {_verdict(import_wall, 0.1)}")
    lines.append(f"- agent creation with default plugins (median across {len(creation)} new processes): {us(with_defaults)}; {_target(with_defaults, 30e-6)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- 6. compaction


def compaction(scale: Scale) -> str:
    try:
        from compaction_bench import time_compaction
    except ImportError as exc:
        return f"## Compaction\n\nnot measured: {exc}\n"
    rows = [(n, time_compaction(n)) for n in (100, 1_000, 10_000)]
    lines = ["## Compaction of long histories\n", "| messages | time | per message |", "|---|---|---|"]
    lines += [f"| {n:,} | {ms(t)} | {us(t / n)} |" for n, t in rows]
    growth = (rows[2][1] / rows[1][1]) if rows[1][1] else float("nan")
    lines.append(f"\n- 1,000 → 10,000 messages: {growth:.1f}× the time (linear is 10×)")
    lines.append(f"- target ≤ 50 ms for 10,000 messages: {_verdict(rows[2][1], 0.05)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- 7. streaming


async def streaming(scale: Scale) -> str:
    from streaming_bench import delta_latencies

    latencies = await delta_latencies(count=max(200, scale.iterations))
    return (
        "## Streaming: from a delta written on the socket to the `text_delta` event\n\n"
        f"- median {us(statistics.median(latencies))}, p99 {us(sorted(latencies)[int(len(latencies) * 0.99) - 1])} "
        f"over {len(latencies)} deltas (server and client in one process, loopback)\n"
    )


# ---------------------------------------------------------------- 8. memory


def memory(scale: Scale) -> str:
    tracemalloc.start()
    scenarios.bandoneon_agent(None)  # warm caches: plugin classes, schemas
    before = tracemalloc.take_snapshot()
    agents = [scenarios.bandoneon_agent(None) for _ in range(100)]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    per_agent = sum(stat.size_diff for stat in after.compare_to(before, "filename")) / len(agents)
    return (
        "## Memory\n\n"
        f"- an idle agent with one tool and the default plugins: {per_agent / 1024:.1f} KiB (tracemalloc, mean of 100); "
        f"target ≤ 64 KiB: {_verdict(per_agent, 64 * 1024)}\n"
        "- 1,000 concurrent sessions: see the concurrency section's peak RSS\n"
    )
