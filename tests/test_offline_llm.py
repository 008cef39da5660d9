"""Models reached without an API key: a command on stdin/stdout (exec:), a file exchange whose unanswered calls
leave the run waiting (inbox:), OpenAI's Batch API against a local fake server; and the loop's side of serving a
real model: debug steps for failures, a stop rule for a model that only repeats itself."""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kernelevolve.llm.base import LLMError, LLMPending, Message
from kernelevolve.llm.batch import OpenAIBatch
from kernelevolve.llm.offline import ExecClient, InboxClient
from kernelevolve.llm.registry import Ensemble, make_client, parse_spec
from kernelevolve.operators.universal import UniversalOperator
from kernelevolve.platforms import get_platform
from kernelevolve.problem.problem import load_problem
from kernelevolve.result import Status
from kernelevolve.search import session
from kernelevolve.search.session import Limits, RunSpec
from kernelevolve.store.store import Store
from tests.conftest import FIXTURES
from tests.doubles import RuleEvaluator, kernel

PROBLEM = FIXTURES / "transpose.py"
PY = sys.executable
MESSAGES = [Message("system", "rules"), Message("user", "write a kernel")]


def fenced(source: str) -> str:
    return f"A larger tile.\n```python\n{source}```\n"


# ---- exec: ----


def test_exec_sends_the_prompt_on_stdin_and_reads_the_answer_from_stdout():
    script = "import os, sys; p = sys.stdin.read(); print(os.environ['KERNELEVOLVE_CALL'], len(p), p.count('## user'))"
    client = make_client(*parse_spec(f'exec:{PY} -c "{script}"')[:2])
    r = client.complete(MESSAGES, name="relu-abc-007")
    name, length, users = r.text.split()
    assert name == "relu-abc-007" and int(length) > 20 and users == "1"
    assert r.prompt_tokens > 0 and r.completion_tokens > 0 and r.extra == {"tokens": "estimated"}


def test_exec_failures_name_the_status_and_the_command_s_stderr():
    with pytest.raises(LLMError, match=r"exited with status 3; its stderr ends: quota exceeded"):
        ExecClient("cat > /dev/null; echo 'quota exceeded' >&2; exit 3").complete(MESSAGES)
    with pytest.raises(LLMError, match="printed no answer on stdout"):
        ExecClient("cat > /dev/null").complete(MESSAGES)
    t0 = time.monotonic()
    with pytest.raises(LLMError, match=r"no answer within 0.5 s \(--llm-timeout\)"):
        ExecClient("sleep 30 & sleep 30; wait", timeout_s=0.5).complete(MESSAGES)  # a child holds the pipe too
    assert time.monotonic() - t0 < 10


def test_spec_weights_and_commands_with_equals_signs():
    assert parse_spec("exec:llm -m gpt --temp=0.2") == ("exec", "llm -m gpt --temp=0.2", 1.0)
    assert parse_spec("exec:llm -m gpt=2") == ("exec", "llm -m gpt=2", 1.0)  # exec and inbox take no weight
    assert parse_spec("vllm:qwen=2") == ("vllm", "qwen", 2.0)
    assert parse_spec("inbox:/tmp/a=b") == ("inbox", "/tmp/a=b", 1.0)
    with pytest.raises(LLMError, match="must be a number"):
        parse_spec("openai:gpt=x")


# ---- inbox: ----


def test_inbox_writes_the_prompt_once_and_reads_the_answer_when_it_comes(tmp_path):
    client = InboxClient(str(tmp_path / "box"))
    with pytest.raises(LLMPending) as pending:
        client.complete(MESSAGES, name="p-1")
    prompt = tmp_path / "box" / "p-1.prompt.md"
    assert "p-1.response.md" in pending.value.where and prompt.read_text().startswith("## system\n\nrules")
    (tmp_path / "box" / "p-1.response.md").write_text("")  # created by an editor, not yet saved
    with pytest.raises(LLMPending):
        client.complete([Message("user", "a different prompt")], name="p-1")
    assert "a different prompt" not in prompt.read_text()  # a call's prompt is never rebuilt
    (tmp_path / "box" / "p-1.response.md").write_text("the answer")
    assert client.complete(MESSAGES, name="p-1").text == "the answer"


def _inbox_run(store, box, seed):
    spec = RunSpec(PROBLEM, seed, llm=(f"inbox:{box}",))
    opened = session.open_run(store, spec, Limits(budget=6))
    operator = session.llm_operator(opened, session.LLMSettings())
    driver = session.build_driver(opened, [RuleEvaluator()], llm=operator, warm_start=False, confirm_best=False)
    reason = driver.run_search()
    return opened, reason, session.finish(opened, reason)


def test_an_inbox_run_waits_and_resumes_serving_answers_out_of_order(tmp_path):
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1, tunable=False))  # no tunables: every step after the seed is the model's
    store, box = Store(tmp_path / "runs"), tmp_path / "box"
    opened, reason, out = _inbox_run(store, box, seed)
    prompts = sorted(box.glob("*.prompt.md"))
    assert out.status == "waiting" and out.waiting == 2 and len(prompts) == 2 and out.evaluations == 1
    assert reason.startswith("waiting for the model's answer to 2 calls (answer ") and "response.md" in reason
    assert store.get_run(opened.run.id).status == "waiting"
    stored = {c["seq"]: c for c in store.pending_calls(opened.run.id)}
    assert {p.read_text() for p in prompts} == {c["prompt"] for c in stored.values()}  # recorded as sent
    first, second = prompts
    # Only the second is answered: it is served, the first stays pending, and a new call takes the free slot.
    second.with_name(second.name.replace(".prompt.", ".response.")).write_text(fenced(kernel(8, tunable=False)))
    again, reason, out = _inbox_run(store, box, seed)
    assert again.run.id == opened.run.id and again.resumed
    assert out.status == "waiting" and out.evaluations == 2 and out.waiting == 2
    assert len(list(box.glob("*.prompt.md"))) == 3
    # drafts served, in flight or waiting count as drafts made: the third call is draft 3, not a second "draft 2"
    third = (box / prompts[0].name.replace("-001.", "-003.")).read_text()
    assert "(draft 3)" in third, third[third.index("# Task") :][:80]
    calls = {c["seq"]: c for c in store.llm_calls(opened.run.id)}
    assert calls[2]["outcome"] == "ok" and calls[2]["node_id"] is not None and calls[1]["outcome"] == "pending"
    assert (store.runs_dir / calls[2]["prompt_path"]).read_text() == stored[2]["prompt"]  # not rebuilt
    # the node records the knowledge-base documents its prompt carried, though the prompt was built a session before
    injected = (store.analysis(calls[2]["node_id"]) or {}).get("knowledge")
    assert injected and injected == stored[2]["knowledge"] and all(p in stored[2]["prompt"] for p in injected)
    # Every call answered: all are served, and the run goes on to its budget.
    answers = iter(kernel(t, tunable=False) for t in (16, 32, 64, 128, 256, 512, 1024, 2048))
    for _ in range(3):
        for p in box.glob("*.prompt.md"):
            answer = p.with_name(p.name.replace(".prompt.", ".response."))
            if not answer.exists():
                answer.write_text(fenced(next(answers)))
        _, reason, out = _inbox_run(store, box, seed)
        if out.status != "waiting":
            break
    assert out.status == "done" and out.waiting == 0 and out.evaluations == 6, reason
    assert all(c["outcome"] != "pending" for c in store.llm_calls(opened.run.id))


def test_the_cli_reports_a_waiting_run_and_exits_0(tmp_path):
    from tests.test_cli_errors import _cli

    box = tmp_path / "box"
    args = ["optimize", FIXTURES / "kb_relu.py", "--target", "cpu", "--llm", f"inbox:{box}", "--json"]
    r = _cli(*args, "--runs-dir", tmp_path / "runs", "--budget", "4")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "waiting" and out["waiting"] == 2 and out["evaluations"] == 0
    assert "waiting: waiting for the model's answer to 2 calls" in r.stderr and "run the same command again" in r.stderr
    assert len(list(box.glob("*.prompt.md"))) == 2


# ---- the loop serving a model ----


class _Scripted:
    """A client answering from a list (the universal operator's prompts are kept, to read what it was told)."""

    provider, deferred = "scripted", False

    def __init__(self, answers):
        self.model, self.name = "m", "scripted:m"
        self.answers, self.prompts = list(answers), []

    def check_key(self):
        return ""

    def complete(self, messages, **kw):
        from kernelevolve.llm.base import LLMResponse

        self.prompts.append("\n".join(m.content for m in messages))
        return LLMResponse(text=self.answers.pop(0), model=self.name)


def _search(tmp_path, answers, *, statuses=None, budget=6, **kw):
    seed = tmp_path / "seed.py"
    seed.write_text(kernel(1, tunable=False))
    client = _Scripted(answers)
    op = UniversalOperator(Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))
    opened = session.open_run(Store(tmp_path / "runs"), RunSpec(PROBLEM, seed, llm=("s:m",)), Limits(budget=budget))
    evaluator = RuleEvaluator(statuses=statuses)
    driver = session.build_driver(
        opened, [evaluator], llm=op, warm_start=False, confirm_best=False, max_inflight=1, **kw
    )
    return opened, client, driver.run_search()


def test_a_failing_child_of_a_promising_parent_gets_a_debug_step_with_its_error(tmp_path):
    broken = kernel(8, "BROKEN = 1\n", tunable=False)
    answers = [fenced(broken), fenced(kernel(8, tunable=False)), fenced(kernel(16, tunable=False))]
    opened, client, _ = _search(tmp_path, answers, statuses={"BROKEN": Status.COMPILE_ERROR}, budget=4, draft_steps=0)
    store = opened.store
    nodes = {n.step: n for n in store.nodes(opened.run.id)}
    assert nodes[2].status == "compile_error" and [e.parent_id for e in nodes[2].parents] == [nodes[1].id]
    # the next step was built on the failure, and its prompt carried the error
    assert [e.parent_id for e in nodes[3].parents] == [nodes[2].id]
    assert "scripted compile_error: BROKEN" in client.prompts[1]
    # each LLM node records the knowledge-base documents its prompt carried: retrieval can be measured
    injected = store.analysis(nodes[3].id)["knowledge"]
    assert injected and all(path.endswith(".md") and path in client.prompts[1] for path in injected)


def test_with_no_correct_node_a_failure_is_refined_rather_than_only_drafting_anew(tmp_path):
    seedless = session.open_run(Store(tmp_path / "runs"), RunSpec(PROBLEM, llm=("s:m",)), Limits(budget=4))
    answers = [fenced(kernel(t, "BROKEN = 1\n", tunable=False)) for t in (2, 4)]
    answers += [fenced(kernel(t, tunable=False)) for t in (8, 16)]
    client = _Scripted(answers)
    op = UniversalOperator(Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))
    evaluator = RuleEvaluator(statuses={"BROKEN": Status.INCORRECT})
    driver = session.build_driver(
        seedless, [evaluator], llm=op, warm_start=False, confirm_best=False, max_inflight=1, draft_steps=1
    )
    driver.run_search()
    nodes = seedless.store.nodes(seedless.run.id)
    by_id = {n.id: n for n in nodes}
    # the second step fixes the failed draft; the third, with that failing too (two in a row), drafts anew
    assert [n.operator for n in nodes] == ["llm-draft", "llm", "llm-draft", "llm"]
    assert by_id[nodes[1].parents[0].parent_id].step == 1 and not nodes[1].correct
    assert nodes[2].correct and "BROKEN" in client.prompts[1]


def test_a_model_that_only_repeats_itself_stops_the_run_with_a_reason(tmp_path):
    same = fenced(kernel(8, tunable=False))
    opened, _, reason = _search(tmp_path, [same] * 20, budget=20)
    assert "answers gave nothing to evaluate" in reason and "a known kernel" in reason, reason
    outcomes = [c["outcome"] for c in opened.store.llm_calls(opened.run.id)]
    assert outcomes.count("duplicate") == 5 and len(outcomes) <= 7


# ---- openai-batch: against a local fake of the Batch API ----


class _FakeBatchAPI:
    """Files and batches as OpenAI's API serves them: a batch is in progress for `polls_before_done` polls."""

    def __init__(self, polls_before_done: int = 1):
        self.requests: list[tuple[str, str]] = []
        self.uploaded: list[dict] = []
        self.polls, self.polls_before_done = 0, polls_before_done
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, body, code=200, raw=False):
                data = body.encode() if raw else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/octet-stream" if raw else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0))).decode(errors="replace")
                api.requests.append(("POST", self.path))
                if self.path == "/v1/files":
                    line = body[body.index('{"custom_id"') :].split("\n")[0].split("\r")[0]
                    api.uploaded.append(json.loads(line))
                    file = {"id": "file-in", "object": "file", "bytes": len(line), "created_at": 0}
                    self._send({**file, "filename": "x.jsonl", "purpose": "batch", "status": "processed"})
                elif self.path == "/v1/batches":
                    self._send(api.batch("validating"))

            def do_GET(self):
                api.requests.append(("GET", self.path))
                if self.path == "/v1/batches/batch-1":
                    api.polls += 1
                    done = api.polls > api.polls_before_done
                    self._send(api.batch("completed" if done else "in_progress", "file-out" if done else None))
                elif self.path == "/v1/files/file-out/content":
                    line = {
                        "custom_id": api.uploaded[0]["custom_id"],
                        "response": {
                            "status_code": 200,
                            "body": {
                                "choices": [{"message": {"role": "assistant", "content": "batched answer"}}],
                                "usage": {"prompt_tokens": 11, "completion_tokens": 7},
                            },
                        },
                        "error": None,
                    }
                    self._send(json.dumps(line) + "\n", raw=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def batch(self, status, output=None):
        return {
            "id": "batch-1",
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": "file-in",
            "completion_window": "24h",
            "created_at": 0,
            "status": status,
            "output_file_id": output,
        }


def test_the_batch_provider_submits_once_polls_and_serves_the_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    api = _FakeBatchAPI(polls_before_done=1)
    try:
        client = OpenAIBatch("gpt-4.1", base_url=api.url)
        with pytest.raises(LLMPending, match="batch batch-1 is in_progress"):
            client.complete(MESSAGES, name="relu-abc-001")
        body = api.uploaded[0]
        assert body["custom_id"] == "relu-abc-001" and body["url"] == "/v1/chat/completions"
        assert body["body"]["model"] == "gpt-4.1" and body["body"]["messages"][1]["content"] == "write a kernel"
        # a later session (a new client): the record of the batch survives, nothing is submitted again
        later = OpenAIBatch("gpt-4.1", base_url=api.url)
        r = later.complete(MESSAGES, name="relu-abc-001")
        assert r.text == "batched answer" and (r.prompt_tokens, r.completion_tokens) == (11, 7)
        assert [p for p in api.requests if p[0] == "POST"] == [("POST", "/v1/files"), ("POST", "/v1/batches")]
    finally:
        api.server.shutdown()


def test_a_tune_operator_with_nothing_new_does_not_end_a_run_the_model_can_go_on_with(tmp_path):
    """Every kernel lists one TILE value: the tune operator never has a new one. With a model, that gives the step
    to the model rather than stopping the run ("search space exhausted" stopped the cpu proof's rounds early)."""
    one_value = [kernel(t).replace("[1, 2, 4, 8, 16, 32, 64, 128]", f"[{t}]") for t in (1, 2, 4, 8, 16, 32, 64)]
    seed = tmp_path / "seed.py"
    seed.write_text(one_value[0])
    client = _Scripted([fenced(k) for k in one_value[1:]])
    op = UniversalOperator(Ensemble([(client, 1.0)], random.Random(0)), load_problem(PROBLEM), get_platform("cpu"))
    opened = session.open_run(Store(tmp_path / "runs"), RunSpec(PROBLEM, seed, llm=("s:m",)), Limits(budget=6))
    driver = session.build_driver(
        opened, [RuleEvaluator()], llm=op, warm_start=False, confirm_best=False, max_inflight=1, draft_steps=0
    )
    driver.config = type(driver.config)(**{**driver.config.__dict__, "tune_p": 1.0})  # always try tuning first
    reason = driver.run_search()
    assert reason == "budget of 6 nodes reached", reason
    assert [n.operator for n in opened.store.nodes(opened.run.id)] == ["seed"] + ["llm"] * 5


def test_a_malformed_batch_output_is_the_call_s_error_not_a_crash(tmp_path, monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    client = OpenAIBatch("gpt-4.1", base_url="http://127.0.0.1:9/v1")
    client.state_dir.mkdir(parents=True)
    (client.state_dir / "c-001.json").write_text(json.dumps({"batch_id": "b1"}))
    done = SimpleNamespace(status="completed", output_file_id="f", error_file_id=None, errors=None)
    client._client = SimpleNamespace(
        batches=SimpleNamespace(retrieve=lambda _id: done),
        files=SimpleNamespace(content=lambda _id: SimpleNamespace(text="not json\n")),
    )
    with pytest.raises(LLMError, match="batch b1's output is malformed"):
        client.collect("c-001")


class _FakeMessageBatches:
    """Message Batches as Anthropic's API serves them: a batch is in progress for `polls_before_done` polls."""

    def __init__(self, polls_before_done: int = 1, result: str = "succeeded"):
        self.requests: list[tuple[str, str]] = []
        self.submitted: list[dict] = []
        self.polls, self.polls_before_done, self.result = 0, polls_before_done, result
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, body, raw=False):
                data = body.encode() if raw else json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/binary" if raw else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                api.requests.append(("POST", self.path))
                api.submitted.append(json.loads(self.rfile.read(int(self.headers.get("content-length", 0)))))
                self._send(api.batch("in_progress"))

            def do_GET(self):
                api.requests.append(("GET", self.path))
                if self.path == "/v1/messages/batches/msgbatch_1":
                    api.polls += 1
                    self._send(api.batch("ended" if api.polls > api.polls_before_done else "in_progress"))
                elif self.path == "/v1/messages/batches/msgbatch_1/results":
                    custom_id = api.submitted[0]["requests"][0]["custom_id"]
                    message = {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-x",
                        "content": [{"type": "text", "text": "batched answer"}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 13, "output_tokens": 5},
                    }
                    result = (
                        {"type": "succeeded", "message": message} if api.result == "succeeded" else {"type": api.result}
                    )
                    self._send(json.dumps({"custom_id": custom_id, "result": result}) + "\n", raw=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def batch(self, status):
        ended = status == "ended"
        return {
            "id": "msgbatch_1",
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": 0 if ended else 1,
                "succeeded": int(ended),
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-12-01T00:00:00Z",
            "expires_at": "2026-12-02T00:00:00Z",
            "archived_at": None,
            "cancel_initiated_at": None,
            "ended_at": "2026-12-01T00:10:00Z" if ended else None,
            "results_url": f"{self.url}/v1/messages/batches/msgbatch_1/results" if ended else None,
        }


def test_anthropic_message_batches_submit_once_poll_and_serve_the_answer(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVOLVE_CACHE", str(tmp_path / "cache"))
    api = _FakeMessageBatches(polls_before_done=1)
    try:
        client = make_client("anthropic-batch", "claude-x", base_url=api.url)
        with pytest.raises(LLMPending, match="Anthropic batch msgbatch_1 is in_progress"):
            client.complete(MESSAGES, name="relu-abc-001")
        (request,) = api.submitted[0]["requests"]
        assert request["custom_id"] == "relu-abc-001" and request["params"]["model"] == "claude-x"
        assert request["params"]["system"] == MESSAGES[0].content  # the system message apart, as the API takes it
        assert [m["role"] for m in request["params"]["messages"]] == ["user"]
        later = make_client("anthropic-batch", "claude-x", base_url=api.url)  # a later session
        r = later.complete(MESSAGES, name="relu-abc-001")
        assert r.text == "batched answer" and (r.prompt_tokens, r.completion_tokens) == (13, 5)
        assert [p for p in api.requests if p[0] == "POST"] == [("POST", "/v1/messages/batches")]
    finally:
        api.server.shutdown()
    expired = _FakeMessageBatches(polls_before_done=0, result="expired")
    try:
        client = make_client("anthropic-batch", "claude-x", base_url=expired.url)
        with pytest.raises(LLMError, match="answered call relu-abc-002 with expired"):
            client.complete(MESSAGES, name="relu-abc-002")
    finally:
        expired.server.shutdown()
