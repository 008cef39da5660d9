"""Issue 45's classes tried again as an attacker would, by other mechanisms than the exploits of
test_adversarial.py (the red-team pass of docs/harness.md): each exploit here was accepted on the cpu target
before the fix its test names."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kernelevolve.eval.evaluator import Evaluator
from kernelevolve.eval.worker import finished
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from tests.adversarial.test_adversarial import FAST_TIMING, RELU, RELU_MEDIUM, assert_caught

HERE = Path(__file__).resolve().parent


def test_a_call_that_replies_before_its_work_is_done_is_caught(cpu_evaluator):
    """Class 2, another way: the candidate's process replies to each timed call at once and does the work before it
    reads the next request, so the judge's clock around the call sees a request's cost alone (12-21x for a ReLU at
    about 1x). The judge reads each output right after its call's reply, where the reply says it lies, and the
    output taken later must hold what was read there (eval/worker/finished.py)."""
    result = cpu_evaluator.evaluate(
        load_problem(RELU_MEDIUM), HERE / "exploits" / "replies_before_the_work.py", **FAST_TIMING
    )
    assert_caught(result, Status.REJECTED, "finished-output check: output 0 was not finished when its call replied")


def _reader() -> finished.Reader:
    reader = finished.Reader(os.getpid())  # the judge's reads, of this process's own memory
    assert reader.probe() == "", reader.why_not
    return reader


def test_the_judge_reads_an_output_where_the_reply_says_and_tells_one_written_after():
    reader = _reader()
    out = torch.arange(24, dtype=torch.float32).reshape(4, 6).t()  # strided: the places follow the strides
    assert reader.after_reply(7, finished.where(out)) == ""
    assert reader.check(7, out.clone()) == ""
    assert reader.after_reply(7, finished.where(out)) == ""
    changed = out.clone()
    changed += 1  # what the taken output holds differs from what was there when the call replied
    assert "output 0 was not finished when its call replied" in reader.check(7, changed)


def test_a_reply_that_names_no_readable_place_is_refused():
    reader = _reader()
    assert "not where its reply says" in reader.after_reply(1, [(8, 4, (1024,), (1,))])  # address 8: unmapped
    assert "no output's place" in reader.after_reply(1, "anything")
    assert reader.after_reply(2, [(0, 0, (), ())]) == ""  # no place for a tensor: refused when it is taken
    assert "no place for output 0" in reader.check(2, torch.ones(3))


def test_credential_files_of_the_home_folder_are_out_of_reach_and_printed_ones_redacted(tmp_path, monkeypatch):
    """Class 7 by files: the environment is an allowlist, but the home folder's credential stores were readable
    (.netrc, .aws/credentials, gcloud's application default credentials, all printed into the log the next prompt
    quotes), and the redaction missed their notations. The sandbox hides them (CREDENTIAL_STORES in
    eval/launch/confine.py); what is printed in those notations anyway is redacted."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".config" / "gcloud").mkdir(parents=True)
    (home / ".netrc").write_text("machine api.invalid login bob password netrc-file-must-not-leak\n")
    (home / ".aws" / "credentials").write_text("[default]\naws_secret_access_key = aws-file-must-not-leak\n")
    gcloud = home / ".config" / "gcloud" / "application_default_credentials.json"
    gcloud.write_text('{"refresh_token": "gcloud-file-must-not-leak"}\n')
    monkeypatch.setenv("HOME", str(home))
    with Evaluator("cpu", timeout_s=120) as ev:  # started under that home
        result = ev.evaluate(
            load_problem(RELU), HERE / "exploits" / "prints_home_credentials.py", trials=1, timed=False
        )
    kept = result.log_tail + result.reason
    assert result.status is Status.OK, (result.reason, kept[-2000:])
    if result.sandbox.startswith("none"):
        pytest.skip(f"no sandbox here: {result.sandbox}")
    assert ".netrc: " in kept  # it ran and printed what it found
    for secret in ("file-must-not-leak", "printed-must-not-leak"):
        assert secret not in kept, kept[-2000:]


@pytest.mark.xfail(strict=True, reason="open: work done ahead, in other requests, is not charged (docs/harness.md)")
def test_a_process_that_works_ahead_in_other_requests_is_caught(cpu_evaluator):
    """Class 2/3, open: the candidate's process computes each set's output during the empty requests and the
    reference's calls it serves (whenever the set's contents changed), and answers its own calls at once with a
    finished, right output. The sampled calls' bound takes the fastest of three, and any one sampled iteration
    whose reference call comes first is answered from work done in that call; the unseen-inputs check's two empty
    requests before each call give it the same room. Accepted at 18-28x for a ReLU at about 1x."""
    result = cpu_evaluator.evaluate(load_problem(RELU_MEDIUM), HERE / "exploits" / "works_ahead.py", **FAST_TIMING)
    assert result.status is not Status.OK or (result.speedup or 0.0) < 2.5, (result.speedup, result.reason)
