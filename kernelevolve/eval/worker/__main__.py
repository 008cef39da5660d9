"""`python -m kernelevolve.eval.worker`: the worker process the evaluator starts (eval/worker/main.py)."""

from kernelevolve.eval.worker.main import main

main()
