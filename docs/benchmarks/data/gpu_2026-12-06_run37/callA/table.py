"""Short table of stage medians from harness_gpu.py outputs: python table.py name=file.json ..."""
import json, sys
KEYS = ["wall_less_compile", "load", "calibration", "correctness", "timing", "timing.pass", "timing.cross_check",
        "timing.unseen_inputs", "timing.unseen_inputs.setup", "timing.unseen_inputs.outputs", "launch_check",
        "profile", "worker_exit", "gap"]
cols = {}
for arg in sys.argv[1:]:
    name, path = arg.split("=")
    try:
        r = json.load(open(path))["examples"]["rmsnorm"]["repeat_no_compile"]
    except Exception as e:  # noqa: BLE001
        print(name, "missing", e); continue
    s = dict(r["stages_median_s"])
    s["wall_less_compile"] = r["wall_s_median"] - s.get("compile", 0)
    top = sum(v for k, v in s.items() if "." not in k and k not in ("worker_start", "worker_wait", "compile", "wall_less_compile"))
    s["gap"] = s["wall_less_compile"] - top
    s["speedup"] = r["speedup_mean"]
    cols[name] = s
print("| stage | " + " | ".join(cols) + " |")
for k in KEYS + ["speedup"]:
    print(f"| {k} | " + " | ".join(f"{c.get(k, 0):.3f}" for c in cols.values()) + " |")
