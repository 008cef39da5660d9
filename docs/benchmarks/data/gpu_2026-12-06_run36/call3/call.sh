#!/usr/bin/env bash
source benchmarks/device_env.sh
timeout 80 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_split.json > $OUT/fixed_split.log 2>&1; echo "fixed split rc=$?"
KERNELEVOLVE_GPU_JUDGE=in-process timeout 70 python3 benchmarks/harness_gpu.py --examples rmsnorm --repeats 5 --compile-repeats 0 --out $OUT/fixed_inproc.json > $OUT/fixed_inproc.log 2>&1; echo "fixed inproc rc=$?"
timeout 200 python3 -m pytest -v -rA -m gpu tests/adversarial/test_adversarial_gpu.py -k "honest or forges or content_cache or jagged or extension" > $OUT/adv_subset.log 2>&1; echo "subset rc=$?"
grep -E "FAILED|passed|failed" $OUT/adv_subset.log | tail -5 | cut -c1-300
python3 - <<'PY'
import json, os
for tag in ("split", "inproc"):
    try:
        d = json.load(open(f"{os.environ['OUT']}/fixed_{tag}.json"))
    except Exception as e:
        print(tag, "no json", e); continue
    s = d["examples"]["rmsnorm"]["repeat_no_compile"]
    st = s["stages_median_s"]
    print(tag, "wall", round(s["wall_s_median"], 3), "less compile", round(s["wall_s_median"] - st["compile"], 3), "speedup", s.get("speedup_mean"), "cv%", s.get("speedup_cv_pct"))
    print("  ", {k: round(v, 3) for k, v in st.items() if k not in ("worker_start",)})
PY
