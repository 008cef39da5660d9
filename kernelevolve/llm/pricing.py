"""Cost of a call from a price table: USD per million prompt and completion tokens, per model.

The project ships no commercial prices (they change, and a stale figure is worse than none). Users give
theirs in a JSON file, `{"openai:gpt-4.1": [2.0, 8.0], "anthropic:claude-sonnet-4-5": [3.0, 15.0]}`, named by
`--prices FILE` or KERNELEVOLVE_PRICES. Local servers (vllm, ollama, ...) cost 0. A model with no price is
reported as unpriced, not as free.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FREE_PROVIDERS = ("vllm", "ollama", "sglang", "lmstudio", "replay", "local")


class PriceTable:
    def __init__(self, prices: dict[str, tuple[float, float]] | None = None):
        self.prices = dict(prices or {})

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        path = path or os.environ.get("KERNELEVOLVE_PRICES")
        if not path:
            return cls()
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read the price table {path}: {e}") from e
        if not isinstance(data, dict) or not all(isinstance(v, list) and len(v) == 2 for v in data.values()):
            raise ValueError(f'{path}: expected {{"provider:model": [usd_per_M_prompt, usd_per_M_completion]}}')
        return cls({k: (float(v[0]), float(v[1])) for k, v in data.items()})

    def priced(self, name: str) -> bool:
        return name in self.prices or name.split(":", 1)[0] in FREE_PROVIDERS

    def cost(self, name: str, prompt_tokens: int, completion_tokens: int) -> float:
        if name not in self.prices:
            return 0.0
        p_in, p_out = self.prices[name]
        return (prompt_tokens * p_in + completion_tokens * p_out) / 1e6
