"""A C++ load_inline build with torch's header precompiled for its flags against one without: the build step's
own work (`extension_cache.build_into`, in this process), on one source with the flags of the shipped seeds, and
what making the header costs once (`BuildService.header`, the sandboxed step). Each build gets a fresh folder and
name, so none is reused.

    python benchmarks/header_build.py [--repeats 2] [--out header_build.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from kernelevolve.eval.builds.extension_cache import PRECOMPILED, build_into, request_of
from kernelevolve.eval.builds.service import BuildService

SOURCE = r"""
torch::Tensor scale(torch::Tensor x, double a) {
    auto y = torch::empty_like(x);
    const float* src = x.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    #pragma omp parallel for
    for (int64_t i = 0; i < x.numel(); ++i) dst[i] = static_cast<float>(a) * src[i];
    return y;
}
"""
FLAGS = ["-O3", "-march=native", "-fopenmp"]


def request(name: str) -> dict:
    arguments = {"name": name, "cpp_sources": SOURCE, "functions": ["scale"], "extra_cflags": FLAGS}
    return request_of("load_inline", {**arguments, "extra_ldflags": ["-fopenmp"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.monotonic()
        service = BuildService(root=root / "extensions")
        header = service.header(request("header")) or service.header(request("header"))  # made at the second
        made_s = time.monotonic() - t0
        if header is None:
            raise SystemExit(f"no header could be made: see {root / 'extensions' / '.headers'}")
        size = sum(p.stat().st_size for p in header.rglob("*") if p.is_file())
        walls: dict[str, list[float]] = {"without": [], "with": []}
        for i in range(args.repeats):
            for mode in walls:
                folder = root / f"{mode}-{i}"
                folder.mkdir()
                job = request(f"ke_{mode}_{i}")
                if mode == "with":
                    job[PRECOMPILED] = str(header)
                t0 = time.monotonic()
                build_into(job, folder)
                walls[mode].append(time.monotonic() - t0)
    result = {
        "header_made_s": made_s,
        "header_bytes": size,
        "build_s": walls,
        "median_s": {mode: statistics.median(w) for mode, w in walls.items()},
    }
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"header made in {made_s:.1f} s, {size / 2**20:.0f} MB")
    for mode, w in walls.items():
        print(f"build {mode:7} the header: median {statistics.median(w):.1f} s of {[round(x, 1) for x in w]}")


if __name__ == "__main__":
    main()
