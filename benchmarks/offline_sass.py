"""Compile one Triton kernel for an NVIDIA GPU on a machine without one, and report what the compiler made of it:
registers, spills (stack), shared memory, and the mix of memory and tensor-core instructions in its SASS.

Why: device time is scarce, and some questions need no device. Whether a tile is loaded 16 bytes at a time or 2,
whether a persistent kernel's programs fit on an SM, whether the dots became wgmma: the compiled binary says so
(readings so far: docs/benchmarks/README.md). Times still need the GPU.

Usage:
    python benchmarks/offline_sass.py FILE KERNEL [--const NAME=VALUE ...] [--type NAME=TYPE ...]
        [--warps N] [--stages N] [--arch 90] [--no-div16 NAME ...] [--json]

Argument types default to: UPPER-CASE names constexpr (give each with --const), names ending in _ptr `*fp32`,
`eps` `fp32`, anything else `i32`; --type overrides (`x_ptr=*fp16`, `count_ptr=*i32`). Pointers and integer
arguments are assumed 16-divisible, as Triton specialises them at a launch with aligned tensors and sizes that are
multiples of 16; --no-div16 NAME drops that for one argument (an odd size, say).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

INSTRUCTIONS = r"\b((?:LDG|STG|LDS|STS|LDGSTS|LDSM|UTMALDG|UTMASTG|HGMMA|HMMA|SHFL|ATOMG|RED)[A-Z0-9._]*)"


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"error: {what} {item!r} is not NAME=VALUE")
        out[name] = value
    return out


def compile_report(
    path: Path,
    kernel: str,
    consts: dict,
    types: dict[str, str],
    warps: int,
    stages: int,
    arch: int,
    no_div16: set[str],
) -> dict:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, kernel, None)
    if fn is None or not hasattr(fn, "arg_names"):
        sys.exit(f"error: {path} has no Triton kernel named {kernel!r}")
    signature = {}
    for name in fn.arg_names:
        if name in types:
            signature[name] = types[name]
        elif name.isupper() or name in consts:
            signature[name] = "constexpr"
        elif name.endswith("_ptr"):
            signature[name] = "*fp32"
        elif name == "eps":
            signature[name] = "fp32"
        else:
            signature[name] = "i32"
    missing = [n for n, t in signature.items() if t == "constexpr" and n not in consts]
    if missing:
        sys.exit(f"error: give each constexpr with --const: {', '.join(missing)}")
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, name in enumerate(fn.arg_names)
        if name not in no_div16 and (signature[name].startswith("*") or signature[name] in ("i32", "i64"))
    }
    src = ASTSource(fn=fn, signature=signature, constexprs=consts, attrs=attrs)
    compiled = triton.compile(
        src, target=GPUTarget("cuda", arch, 32), options={"num_warps": warps, "num_stages": stages}
    )
    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "kernel.cubin"
        cubin.write_bytes(compiled.asm["cubin"])
        usage = subprocess.run([tools / "cuobjdump", "--dump-resource-usage", cubin], capture_output=True, text=True)
        sass = subprocess.run([tools / "cuobjdump", "-sass", cubin], capture_output=True, text=True).stdout
    resources = dict(re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", usage.stdout))
    regs = int(resources.get("REG", 0))
    threads = 32 * warps
    return {
        "kernel": kernel,
        "arch": f"sm_{arch}",
        "num_warps": warps,
        "num_stages": stages,
        "constexprs": consts,
        "registers": regs,
        "stack_bytes": int(resources.get("STACK", 0)),
        "shared_bytes": compiled.metadata.shared,
        # 64K registers per SM, allocated 8 per thread at a time; 2048 threads; shared memory left to the caller
        "programs_per_sm_by_registers": 65536 // (max(8, -(-regs // 8) * 8) * threads) if regs else None,
        "instructions": dict(sorted(Counter(re.findall(INSTRUCTIONS, sass)).items())),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("kernel")
    ap.add_argument("--const", action="append", default=[], help="NAME=VALUE for a constexpr argument")
    ap.add_argument("--type", action="append", default=[], help="NAME=TYPE (*fp16, *i32, i64, fp32, ...)")
    ap.add_argument("--warps", type=int, default=4)
    ap.add_argument("--stages", type=int, default=3)
    ap.add_argument("--arch", type=int, default=90, help="compute capability as one number (90: Hopper)")
    ap.add_argument("--no-div16", nargs="*", default=[], help="arguments not to assume 16-divisible")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.file.is_file():
        sys.exit(f"error: {args.file}: no such file")
    os.environ.pop("TRITON_INTERPRET", None)
    consts = {k: _value(v) for k, v in _pairs(args.const, "--const").items()}
    report = compile_report(
        args.file,
        args.kernel,
        consts,
        _pairs(args.type, "--type"),
        args.warps,
        args.stages,
        args.arch,
        set(args.no_div16),
    )
    if args.json:
        print(json.dumps(report, indent=1))
        return
    print(
        f"{report['kernel']} on {report['arch']}, {report['num_warps']} warps, {report['num_stages']} stages: "
        f"{report['registers']} registers, {report['stack_bytes']} bytes of stack, {report['shared_bytes']} bytes of "
        f"shared memory; {report['programs_per_sm_by_registers']} programs per SM by registers"
    )
    for name, count in report["instructions"].items():
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
