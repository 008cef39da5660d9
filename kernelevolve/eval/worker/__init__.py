"""The worker side of evaluation: everything that runs inside a worker process, torch imported.

`python -m kernelevolve.eval.worker` is the process the evaluator starts (`main.py`); `harness.run_job` runs one
job in it: phase A (`prepare.py`, trusted, before any candidate code exists in the process), then phase B (the
candidate: `candidate.py`, `checking.py`, `timing.py` and the checks). The parent side (`eval/evaluator.py`,
`eval/wire.py`, `eval/launch/spawn.py`, `eval/probes.py`) never imports this package's torch-importing modules;
importing
the package itself imports nothing.
"""
