"""The LLM path against local fake servers (never the network): providers, accounting, the universal operator's
prompts, failures recorded rather than raised, replay, and the optimize command's LLM options."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from kernelevolve.eval.wire import EvalOptions
from kernelevolve.llm.base import LLMError, Message
from kernelevolve.llm.pricing import PriceTable
from kernelevolve.llm.providers import RetryPolicy
from kernelevolve.llm.registry import Ensemble, make_client, parse_spec
from kernelevolve.operators.replay import ReplayOperator
from kernelevolve.operators.tune import TuneOperator
from kernelevolve.operators.universal import ParentContext, UniversalOperator
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import CaseResult, EvalResult, Status
from kernelevolve.search.driver import Driver, SearchConfig
from kernelevolve.search.strategies import make_strategy
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator
from tests.fake_llm import Delay, FakeLLMServer, Garbage, Reply
from tests.fake_llm import Status as HTTPStatus

PROBLEM = FIXTURES / "kb_relu.py"
FAST_RETRY = RetryPolicy(attempts=3, initial_s=0.01, max_s=0.05)
PRICES = PriceTable({"openai:fake-coder": (1.0, 2.0)})

CORRECT = """Uses clamp_min, one pass over x.
```python
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0.0)
```"""
WRONG = """```python
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x.abs()
```"""
BROKEN = """```python
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return undefined_kernel(x)
```"""
EDIT = """Replace the clamp by a where.
<<<<<<< SEARCH
        return x.clamp_min(0.0)
=======
        return torch.where(x > 0, x, torch.zeros_like(x))
>>>>>>> REPLACE
"""


def _operator(server: FakeLLMServer, timeout_s: float = 5.0) -> UniversalOperator:
    client = make_client("openai", "fake-coder", base_url=server.base_url, timeout_s=timeout_s, retry=FAST_RETRY)
    return UniversalOperator(
        Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"), prices=PRICES
    )


def _driver(store, operator, evaluator, budget, strategy="greedy", max_cost=None):
    problem = load_problem(PROBLEM)
    run = store.create_run(
        problem_path=str(problem.path),
        problem_hash=problem.hash,
        platform="cpu",
        config={"llm": True},
        config_hash=f"c{random.random()}",
        budget=budget,
    )
    rng = random.Random(0)
    config = SearchConfig(budget=budget, max_cost=max_cost, max_inflight=1, options=EvalOptions(trials=1))
    strategy = make_strategy(strategy, rng)
    return Driver(store, run, problem, strategy, [evaluator], config, rng, tune=TuneOperator(), llm=operator)


def test_spec_parsing_and_unknown_provider():
    assert parse_spec("vllm:Qwen/Qwen3-32B=2") == ("vllm", "Qwen/Qwen3-32B", 2.0)
    with pytest.raises(LLMError, match="PROVIDER:MODEL"):
        parse_spec("gpt-4")
    with pytest.raises(LLMError, match="unknown LLM provider"):
        make_client("bard", "x")


def test_providers_return_text_and_usage_and_retry_rate_limits():
    with FakeLLMServer("openai") as server:
        server.push(HTTPStatus(429), Reply("hello", prompt_tokens=11, completion_tokens=7))
        client = make_client("openai", "m", base_url=server.base_url, timeout_s=5, retry=FAST_RETRY)
        r = client.complete([Message("system", "s"), Message("user", "u")])
        assert (r.text, r.prompt_tokens, r.completion_tokens, r.model) == ("hello", 11, 7, "openai:m")
        assert len(server.requests) == 2
    with FakeLLMServer("anthropic") as server:
        server.push(Reply("bonjour", prompt_tokens=5, completion_tokens=3))
        client = make_client("anthropic", "claude-x", base_url=server.base_url, timeout_s=5, retry=FAST_RETRY)
        r = client.complete([Message("system", "rules"), Message("user", "u")])
        assert (r.text, r.prompt_tokens, r.completion_tokens) == ("bonjour", 5, 3)
        assert server.requests[-1]["system"] == "rules"


def test_timeouts_and_garbage_become_llm_errors():
    with FakeLLMServer("openai", default=Delay(3.0, Reply("late"))) as server:
        client = make_client("openai", "m", base_url=server.base_url, timeout_s=0.3, retry=FAST_RETRY)
        with pytest.raises(LLMError, match="Timeout"):
            client.complete([Message("user", "u")])
    with FakeLLMServer("openai", default=Garbage("<html>oops</html>")) as server:
        client = make_client("openai", "m", base_url=server.base_url, timeout_s=2, retry=FAST_RETRY)
        with pytest.raises(LLMError):
            client.complete([Message("user", "u")])


def test_refine_prompt_carries_the_parents_feedback():
    op = UniversalOperator(Ensemble([(object(), 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))
    bad = EvalResult(
        status=Status.INCORRECT,
        correct=False,
        reason="case 0: 812 of 65536 elements outside atol",
        cases=[CaseResult(shape={"N": 4}, correct=False, max_abs_err=0.0412)],
    ).finalize()
    parent = ParentContext(
        7,
        "llm",
        "class ModelNew: pass\n",
        bad,
        lineage=[{"id": 3, "operator": "llm-draft", "status": "ok", "fitness": 1.2, "reason": ""}],
    )
    system, user = op.messages(parent)
    assert "ModelNew" in system.content
    assert "improve kernel node 7" in user.content and "812 of 65536 elements outside atol" in user.content
    assert "4.12e-02" in user.content and "node 3 (llm-draft): ok" in user.content
    assert "<<<<<<< SEARCH" in user.content
    crash = EvalResult(
        status=Status.COMPILE_ERROR,
        correct=False,
        reason="syntax error at line 3",
        log_tail="Traceback ...\nSyntaxError: bad",
    ).finalize()
    _, user = op.messages(ParentContext(8, "llm", "x", crash))
    assert "syntax error at line 3" in user.content and "SyntaxError: bad" in user.content
    _, draft = op.messages(None)
    assert "write a fast kernel" in draft.content and "class Model" in draft.content


def test_search_with_an_llm_records_everything_and_replays(tmp_path, cpu_evaluator):
    store = Store(tmp_path)
    with FakeLLMServer("openai") as server:
        server.push(
            Reply(CORRECT, prompt_tokens=1000, completion_tokens=200),  # draft 1: correct
            Reply(WRONG),  # draft 2: incorrect
            Reply("I am sorry, I cannot write kernels."),  # draft 3: unusable
            HTTPStatus(429),
            Reply(EDIT),  # refine: rate limited once, then an edit of the best node
            Delay(3.0, Reply("too late")),
            Reply(BROKEN),  # refine: timed out once, then a runtime error
        )
        driver = _driver(store, _operator(server, timeout_s=1.0), cpu_evaluator, budget=5)
        reason = driver.run_search()
    assert reason == "budget of 5 nodes reached"
    nodes = store.nodes(driver.run.id)
    got = [(n.operator, n.status) for n in nodes]
    assert got == [
        ("llm-draft", "ok"),
        ("llm-draft", "incorrect"),
        ("llm-draft", "rejected"),
        ("llm", "ok"),
        ("llm", "runtime_error"),
    ]
    assert "unusable response" in nodes[2].reason
    assert [e.parent_id for e in nodes[3].parents] == [nodes[0].id]  # the edit was applied to the best node
    assert "torch.where" in store.path(nodes[3].kernel_path).read_text()
    calls = store.llm_calls(driver.run.id)
    assert [c["outcome"] for c in calls] == ["ok", "ok", "unusable", "ok", "ok"]
    assert calls[0]["prompt_tokens"] == 1000 and calls[0]["cost"] == pytest.approx((1000 * 1 + 200 * 2) / 1e6)
    assert "write a fast kernel" in store.path(calls[0]["prompt_path"]).read_text()
    refine_prompt = store.path(calls[4]["prompt_path"]).read_text()
    assert (
        f"improve kernel node {nodes[0].id}" in refine_prompt or f"improve kernel node {nodes[3].id}" in refine_prompt
    )
    usage = store.llm_usage(driver.run.id)["openai:fake-coder"]
    assert usage["calls"] == 5 and usage["failed"] == 1

    # Replay: the same responses on the same parents, without any server; same node sequence.
    op = ReplayOperator(store, driver.run.id, load_problem(PROBLEM), get_platform("cpu"))
    replayed = _driver(store, op, cpu_evaluator, budget=10)
    assert replayed.run_search() == "replay: every recorded response has been served"
    again = store.nodes(replayed.run.id)
    assert [(n.operator, n.source_hash, n.status) for n in again] == [
        (n.operator, n.source_hash, n.status) for n in nodes
    ]


def test_unreachable_llm_stops_the_run_with_the_reason(tmp_path):
    store = Store(tmp_path)
    client = make_client("openai", "m", base_url="http://127.0.0.1:9/v1", timeout_s=0.5, retry=FAST_RETRY)
    op = UniversalOperator(Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))
    driver = _driver(store, op, RuleEvaluator(), budget=5)
    reason = driver.run_search()
    assert reason.startswith("the LLM failed 3 times in a row") and "APIConnectionError" in reason
    assert [c["outcome"] for c in store.llm_calls(driver.run.id)] == ["error"] * 3
    assert store.nodes(driver.run.id) == []


def test_cost_budget_stops_the_search(tmp_path):
    store = Store(tmp_path)
    answers = [Reply(WRONG if i % 2 else CORRECT.replace("0.0", f"{i}.0"), prompt_tokens=10**6) for i in range(6)]
    with FakeLLMServer("openai") as server:
        server.push(*answers)
        driver = _driver(store, _operator(server), RuleEvaluator(lambda source: 1.0), budget=10, max_cost=1.5)
        reason = driver.run_search()
    assert reason.startswith("LLM cost budget of $1.5 reached")
    assert len(store.llm_calls(driver.run.id)) == 2


def test_optimize_command_with_llm_dry_run_and_run(tmp_path):
    base = [
        sys.executable,
        "-m",
        "kernelevolve",
        "optimize",
        str(PROBLEM),
        "--target",
        "cpu",
        "--runs-dir",
        str(tmp_path),
        "--trials",
        "1",
    ]
    p = subprocess.run(
        [*base, "--llm", "openai:fake-coder", "--dry-run"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"OPENAI_API_KEY": "x", "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stderr
    prompt = (tmp_path / "prompt-kb_relu.md").read_text()
    assert "## system" in prompt and "class Model" in prompt
    p = subprocess.run([*base], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--seed KERNEL" in p.stderr
    with FakeLLMServer("openai", default=Reply(CORRECT)) as server:
        p = subprocess.run(
            [*base, "--llm", "vllm:fake-coder", "--llm-base-url", server.base_url, "--budget", "2", "--json"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["llm_calls"] >= 2 and out["best_fitness"] and "LLM vllm:fake-coder" in p.stderr


class ScriptedClient:
    """A deterministic test double: answers from a list, records what it was sent."""

    name = model = "scripted:model"

    def __init__(self, *texts: str):
        self.texts = list(texts)
        self.seen: list[list[Message]] = []

    def complete(self, messages, **kw):
        from kernelevolve.llm.base import LLMResponse

        self.seen.append(list(messages))
        return LLMResponse(self.texts.pop(0), self.model, prompt_tokens=10, completion_tokens=5)


def test_agent_reads_edits_checks_and_submits():
    from kernelevolve.operators.agent import run_agent

    parent = (
        "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return x.clamp_min(0.0)\n"
    )
    checks = []
    client = ScriptedClient(
        "READ", EDIT, "<<<<<<< SEARCH\nnot in the file\n=======\nx\n>>>>>>> REPLACE", "CHECK", "SUBMIT"
    )
    result = run_agent(
        client,
        [Message("system", "s"), Message("user", "task")],
        parent,
        check=lambda s: checks.append(s) or "ok: builds",
        budget=6,
    )
    assert result.error == "" and "torch.where" in result.source
    observations = [m.content for m in result.transcript if m.role == "user"][1:]
    assert "   7 |         return x.clamp_min(0.0)" in observations[0]
    assert observations[1].startswith("applied (edit)")
    assert observations[2].startswith("not applied:") and "did not match" in observations[2]
    assert observations[3].startswith("ok: builds") and checks == [result.source]
    assert len(result.responses) == 5 and "[2 commands left]" in observations[3]
    # a budget that runs out submits the current file; no change at all is an error
    result = run_agent(ScriptedClient("READ", "READ"), [Message("user", "t")], parent, check=str, budget=2)
    assert result.source is None and "no change" in result.error


def test_agentic_search_step_with_a_real_check(tmp_path, cpu_evaluator):
    store = Store(tmp_path)
    with FakeLLMServer("openai") as server:
        server.push(Reply(CORRECT), Reply("CHECK"), Reply("SUBMIT"))
        op = _operator(server)
        op.agent_budget = 4
        driver = _driver(store, op, cpu_evaluator, budget=1)
        driver.run_search()
    (node,) = store.nodes(driver.run.id)
    assert node.status == "ok" and node.operator == "llm-draft"
    (call,) = store.llm_calls(driver.run.id)
    assert call["prompt_tokens"] == 300 and call["outcome"] == "ok"
    transcript = store.path(call["prompt_path"]).read_text()
    assert "ok: the file parses, imports and builds" in transcript
