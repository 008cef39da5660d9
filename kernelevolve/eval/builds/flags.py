"""The compiler and linker flags a candidate's build may pass: an allowlist (docs/harness.md, "Isolation").

A flag reaches the compiler, and some run programs of the caller's choosing at build time (`-wrapper`, `-fplugin`,
`-B`, `-specs`, a linker plugin) or write files beside the build (`-save-temps`, `-fdump-*`). The build step is
sandboxed, but what it writes can land in the extension cache for good; so only flags that choose what code is
made (optimisation, target, defines, warnings, include and library paths, nvcc's own code-generation options)
pass. Torch-free, imports nothing of the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Whole flags (after any value joined by "=").
_COMPILE = re.compile(
    r"-O[0-3sgz]?|-Ofast|-g[\w-]*|-w|-pedantic|-pthread|-fPIC|-fpic|-std=[\w+.-]+|-[DU]\w+(=\S*)?"
    r"|-m(?!plugin)[\w=.,+-]+|-W(?![lap],)[\w=.,+-]*|-I\S+|-isystem\S*"
    r"|-f(?!plugin|dump|profile|auto-profile|record|debug-prefix|compare-debug|stack-usage|callgraph|opt-info|use-ld"
    r"|linker-plugin)"
    r"[\w=.,+:-]+"
)
_NVCC = re.compile(
    r"--?use_fast_math|-lineinfo|--?expt-relaxed-constexpr|--?expt-extended-lambda|--?extended-lambda"
    r"|-arch(=\S+)?|--gpu-architecture(=\S+)?|-code(=\S+)?|-gencode(=\S+)?|--generate-code(=\S+)?"
    r"|-maxrregcount(=\d+)?|--maxrregcount(=\d+)?|-res-usage|--resource-usage|--?ftz=\w+|--?prec-div=\w+"
    r"|--?prec-sqrt=\w+|--?fmad=\w+|-Xptxas(=[\w=,.+-]+)?|--ptxas-options(=[\w=,.+-]+)?|-t\d+|--threads(=\d+)?"
    r"|-Xcompiler(=\S+)?|--compiler-options(=\S+)?|-restrict|--restrict|-src-in-ptx|--?default-stream=\w+"
)
_LINK = re.compile(
    r"-l[\w.+-]+|-L\S+|-fopenmp|-pthread|-fsanitize=[\w,-]+|-static-lib\w+|-shared-lib\w+|-rdynamic|-g"
    r"|-Wl,(-rpath|--no-as-needed|--as-needed|-O\d)(,\S+)?"
)
# nvcc flags whose value is the next argument
_TAKES_VALUE = {"-arch", "-code", "-gencode", "--generate-code", "-Xptxas", "--ptxas-options", "-Xcompiler",
                "--compiler-options", "-maxrregcount", "--maxrregcount", "--gpu-architecture", "--threads"}  # fmt: skip
_VALUE = re.compile(r"[\w=,.+-]+")


def refused(kwargs: dict[str, object]) -> list[str]:
    """The flags of a load_inline/load call that are not allowed, each with the option it was given in."""
    out = []
    for option, kind in (("extra_cflags", "c"), ("extra_cuda_cflags", "cuda"), ("extra_ldflags", "link")):
        flags = kwargs.get(option) or []
        if isinstance(flags, str):
            flags = [flags]
        out += [f"{option}: {flag}" for flag in _refused(list(map(str, flags)), kind)]
    return out


def _refused(flags: list[str], kind: str) -> Iterable[str]:
    i = 0
    while i < len(flags):
        flag = flags[i]
        if kind == "cuda" and flag in _TAKES_VALUE and i + 1 < len(flags):
            value = flags[i + 1]
            host = flag in ("-Xcompiler", "--compiler-options")
            if (host and list(_refused(value.split(","), "c"))) or (not host and not _VALUE.fullmatch(value)):
                yield f"{flag} {value}"
            i += 2
            continue
        if not _allowed(flag, kind):
            yield flag
        i += 1


def _allowed(flag: str, kind: str) -> bool:
    if kind == "link":
        return bool(_LINK.fullmatch(flag))
    if kind == "cuda" and _NVCC.fullmatch(flag):
        if flag.startswith(("-Xcompiler=", "--compiler-options=")):
            return not list(_refused(flag.split("=", 1)[1].split(","), "c"))
        return True
    return bool(_COMPILE.fullmatch(flag))
