"""Models reached without an API: a command that answers on stdout (`exec:CMD`), and a file exchange (`inbox:DIR`)
for machines that cannot reach a model at all (an air-gapped GPU node, a person pasting into a chat window,
another agent). Neither reports token usage: counts are estimated from characters."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from kernelevolve.llm.base import (
    DeferredClient,
    LLMClient,
    LLMError,
    LLMResponse,
    Message,
    estimated_tokens,
    render,
)

STDERR_CHARS = 2000


class ExecClient(LLMClient):
    """`exec:CMD`: the prompt (as Markdown, `## system` then `## user`) on the command's stdin, the answer from its
    stdout. CMD runs under /bin/sh, so pipes and quoting work as in a terminal; KERNELEVOLVE_CALL names the call."""

    provider = "exec"

    def __init__(self, command: str, *, timeout_s: float = 300.0):
        super().__init__(command)
        if not command.strip():
            raise LLMError("--llm exec:CMD needs a command, e.g. exec:'llm -m gpt-4.1' or exec:'ollama run qwen3'")
        self.timeout_s = timeout_s

    def complete(
        self, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7, name: str = ""
    ) -> LLMResponse:
        prompt = render(messages)
        env = {**os.environ, "KERNELEVOLVE_CALL": name, "KERNELEVOLVE_MAX_TOKENS": str(max_tokens)}
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", self.model],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                start_new_session=True,  # a timeout kills the command's whole group, children included
            )
        except OSError as e:
            raise LLMError(f"{self.name}: cannot start /bin/sh: {e}") from None
        try:
            stdout, stderr = proc.communicate(prompt, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
            raise LLMError(
                f"{self.name}: no answer within {self.timeout_s:g} s (--llm-timeout){_stderr(stderr)}"
            ) from None
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
        if done.returncode != 0:
            raise LLMError(f"{self.name}: exited with status {done.returncode}{_stderr(done.stderr)}")
        if not done.stdout.strip():
            raise LLMError(f"{self.name}: printed no answer on stdout{_stderr(done.stderr)}")
        return LLMResponse(
            text=done.stdout,
            model=self.name,
            prompt_tokens=estimated_tokens(prompt),
            completion_tokens=estimated_tokens(done.stdout),
            latency_s=time.monotonic() - t0,
            extra={"tokens": "estimated"},
        )


def _stderr(text: str | bytes | None) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    text = (text or "").strip()
    return f"; its stderr ends: {text[-STDERR_CHARS:]}" if text else ""


class InboxClient(DeferredClient):
    """`inbox:DIR`: call NAME writes DIR/NAME.prompt.md; its answer is read from DIR/NAME.response.md whenever it
    appears (the same session or a later one). Files are written whole (a temporary name, then a rename), so a
    reader never sees half a prompt."""

    provider = "inbox"

    def __init__(self, folder: str):
        super().__init__(folder)
        if not folder.strip():
            raise LLMError("--llm inbox:DIR needs a folder, e.g. inbox:runs/inbox")
        self.folder = Path(folder).expanduser()

    def prompt_path(self, name: str) -> Path:
        return self.folder / f"{name}.prompt.md"

    def response_path(self, name: str) -> Path:
        return self.folder / f"{name}.response.md"

    def where(self, name: str) -> str:
        return f"answer {self.prompt_path(name)} in {self.response_path(name).name}"

    def submit(self, name: str, messages: list[Message], *, max_tokens: int = 8192, temperature: float = 0.7) -> None:
        path = self.prompt_path(name)
        if path.exists():
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(render(messages))
            tmp.replace(path)
        except OSError as e:
            raise LLMError(f"{self.name}: cannot write {path}: {e.strerror or e}") from None

    def collect(self, name: str) -> LLMResponse | None:
        path = self.response_path(name)
        try:
            text = path.read_text()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as e:
            raise LLMError(f"{self.name}: cannot read {path}: {e}") from None
        if not text.strip():
            return None  # created, not yet written
        try:
            prompt = self.prompt_path(name).read_text()
        except OSError:
            prompt = ""
        return LLMResponse(
            text=text,
            model=self.name,
            prompt_tokens=estimated_tokens(prompt),
            completion_tokens=estimated_tokens(text),
            extra={"tokens": "estimated"},
        )
