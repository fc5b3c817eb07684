"""A case can send images and documents with its prompt; paths resolve against the dataset file."""

from __future__ import annotations

import json

import bandoneon
import pytest
from bandoneon.testing import FunctionModel
from bandoneon_evals import DatasetError, exact, load_dataset, run_eval


async def test_a_case_with_an_image_sends_it_with_the_prompt(tmp_path):
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "cat.png").write_bytes(b"\x89PNG fake")
    dataset = tmp_path / "cases" / "vision.jsonl"
    dataset.write_text(json.dumps({"id": "cat", "input": "What animal?", "expected": "cat", "attachments": ["cat.png"]}) + "\n")
    cases = load_dataset(dataset)
    seen = []

    def answer(request):
        seen.append(request.messages[0].parts)
        return "cat"

    def make_agent():
        return bandoneon.Agent(FunctionModel(answer), plugins=[], context_files=False)

    report = await run_eval(cases, make_agent, [exact()], progress=False)
    assert report.pass_rate == 1.0
    assert [p.kind for p in seen[0]] == ["text", "image"] and seen[0][1].data == b"\x89PNG fake"
    assert cases[0].to_json()["attachments"] == [str(tmp_path / "cases" / "cat.png")]


def test_a_missing_attachment_refuses_the_dataset(tmp_path):
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"id": "x", "input": "?", "attachments": ["gone.pdf"]}) + "\n")
    with pytest.raises(DatasetError, match=r"d.jsonl:1: attachment .*gone.pdf does not exist"):
        load_dataset(dataset)


@pytest.mark.parametrize("reach", ["../secret.txt", "{outside}/secret.txt", "sub/../../secret.txt", "link.txt"])
def test_a_dataset_file_attaches_only_files_in_its_own_folder(tmp_path, reach):
    """A dataset is data, often someone else's: it must not send the model a file from anywhere
    on the machine (``~/.ssh/id_rsa``), by a path, ``..`` or a symbolic link."""
    (tmp_path / "secret.txt").write_text("the key")
    folder = tmp_path / "cases"
    (folder / "sub").mkdir(parents=True)
    (folder / "link.txt").symlink_to(tmp_path / "secret.txt")
    dataset = folder / "d.jsonl"
    before = dataset.write_text(json.dumps({"id": "x", "input": "?", "attachments": [reach.format(outside=tmp_path)]}) + "\n")
    with pytest.raises(DatasetError, match=r"d.jsonl:1: attachment .* is outside the dataset's folder"):
        load_dataset(dataset)
    assert dataset.stat().st_size == before  # nothing written


def test_cases_built_in_code_attach_what_the_code_says(tmp_path):
    (tmp_path / "elsewhere.txt").write_text("notes")
    (case,) = load_dataset([{"id": "x", "input": "?", "attachments": [str(tmp_path / "elsewhere.txt")]}])
    assert case.attachments == (str(tmp_path / "elsewhere.txt"),)
