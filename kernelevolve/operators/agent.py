"""Agentic mode: within a per-step budget of turns the model works on one kernel file through text commands
(read it, edit it, rewrite it, check it) and then submits it. Text commands work with every provider and
with a scripted test double, like mini-swe-agent's loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kernelevolve.llm.base import LLMClient, LLMError, LLMResponse, Message
from kernelevolve.operators.edits import EditError, apply_response

INSTRUCTIONS = """You work on the kernel file through commands, one per reply:
- READ: show the current file with line numbers.
- CHECK: parse, import and build the file (no timing) and show any error.
- SUBMIT: submit the current file for evaluation (correctness and timing).
- a ```python block with a whole module: replace the file with it.
- SEARCH/REPLACE blocks: edit the file.
You have {budget} commands for this step; when they run out the current file is submitted.
{start}"""


@dataclass
class AgentResult:
    source: str | None
    transcript: list[Message] = field(default_factory=list)
    responses: list[LLMResponse] = field(default_factory=list)
    error: str = ""


def _numbered(source: str) -> str:
    return "\n".join(f"{i:4d} | {line}" for i, line in enumerate(source.splitlines(), 1)) or "(the file is empty)"


def run_agent(
    client: LLMClient,
    messages: list[Message],
    parent_source: str | None,
    check: Callable[[str], str],
    budget: int = 8,
    **complete_kw,
) -> AgentResult:
    start = "The file starts as the current kernel above." if parent_source else "The file starts empty."
    conversation = list(messages)
    instructions = INSTRUCTIONS.format(budget=budget, start=start)
    if conversation and conversation[-1].role == "user":  # keep turns alternating (Anthropic requires it)
        conversation[-1] = Message("user", f"{conversation[-1].content}\n\n{instructions}")
    else:
        conversation.append(Message("user", instructions))
    current = parent_source
    result = AgentResult(None)
    for turn in range(budget):
        try:
            response = client.complete(conversation, **complete_kw)
        except LLMError as e:
            result.error = str(e)
            break
        result.responses.append(response)
        conversation.append(Message("assistant", response.text))
        command = response.text.strip().splitlines()[0].strip().upper() if response.text.strip() else ""
        if command == "SUBMIT":
            break
        if command == "READ":
            observation = _numbered(current or "")
        elif command == "CHECK":
            observation = check(current) if current else "check failed: the file is empty"
        else:
            try:
                current, kind = apply_response(response.text, current)
                observation = (
                    f"applied ({'edit' if kind == 'edit' else 'whole file'}); the file has "
                    f"{len(current.splitlines())} lines"
                )
            except EditError as e:
                observation = f"not applied: {e}"
        left = budget - turn - 1
        conversation.append(Message("user", f"{observation}\n\n[{left} commands left]"))
    result.transcript = conversation
    if current is None or current == parent_source:
        result.error = result.error or "the agent submitted no change to the kernel"
    else:
        result.source = current
    return result
