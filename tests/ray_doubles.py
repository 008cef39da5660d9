"""An evaluator double for Ray actors (pickled by value into them: tests/test_ray_pool.py): scores by the doubles'
rule after a delay, and says which device and when, so a test can check placement and exclusivity."""

from __future__ import annotations

import time
from pathlib import Path

from kernelevolve.platforms import get_platform
from tests.doubles import RuleEvaluator


class SlowRule:
    """Made inside an actor as `Evaluator` is (target, device_index=, prestart=, **options)."""

    def __init__(self, target: str, device_index: int = 0, prestart: object = True, delay_s: float = 0.2, **_):
        self.platform = get_platform(target)
        self.index = device_index
        self.delay_s = delay_s
        self.rule = RuleEvaluator(target=target)

    def evaluate(self, problem, candidate, options=None, /):
        t0 = time.time()
        source = Path(candidate).read_text()
        time.sleep(self.delay_s * (20 if "SLOW" in source else 1))
        result = self.rule.evaluate(problem, candidate, options)
        result.stages.update(started=t0, ended=time.time(), gpu=float(self.index))
        return result

    def prebuild(self, problem, candidate):
        return self.rule.prebuild(problem, candidate)

    def close(self):
        pass
