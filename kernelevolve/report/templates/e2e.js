// The end-to-end proof of a swapped model (kernelevolve prove; docs/model.md "The end-to-end proof"): the outputs'
// verdict by the measured rule, each variant's latency and throughput, and the Amdahl prediction beside the measured
// end-to-end speedup, as e2e.json has them.
"use strict";
const E2E = {};

E2E.render = (data) => {
  const a = data.amdahl;
  const worst = (check) => Math.max(0, ...check.leaves.map((l) => l.worst_ratio || 0));
  KE.fill("subtitle", `${data.entry} on ${data.target} · ${data.date} · torch ${data.torch} · ${data.swap}`);
  KE.fill("cards",
    KE.card("outputs", data.ok ? "equal" : "DIFFER", data.checks.map((c) => `${c.what}: worst ${KE.num(worst(c))}x its rounding error`).join("; ")),
    KE.card("predicted end to end", KE.x(a.predicted), a.predicted_wall ? `on the eager wall time ${KE.x(a.predicted_wall)}` : null),
    KE.card("measured over eager", KE.x(a.measured_vs_eager), a.error === null ? null : `|predicted - measured| / measured ${KE.pct(a.error)}`),
    KE.card("measured over the faster baseline", KE.x(a.measured_vs_best), a.best_baseline ? `the faster of eager and torch.compile: ${a.best_baseline}` : null));

  KE.fill("checks-note", data.checks.length ? `${data.checks[0].rule}; ${data.checks[0].batches} fresh batches` : "");
  const leaves = data.checks.flatMap((c) => c.leaves.map((l) => ({...l, what: c.what})));
  KE.fill("checks-table", KE.table([["what", (l) => l.what], ["output or parameter", (l) => l.name],
    ["verdict", (l) => KE.badge(l.ok ? "ok" : "failed")], ["worst error / own rounding error", (l) => KE.num(l.worst_ratio), "num"],
    ["max abs error", (l) => KE.num(l.max_abs_err), "num"], ["batches beyond", (l) => String(l.failed), "num"],
    ["why", (l) => l.reason || "-"]], leaves));

  const ok = data.variants.filter((v) => v.status === "ok");
  KE.fill("variants-note", `batch of ${data.batch} rows; ` + (data.graphs.on ? "CUDA graphs off and on" : `device graphs off: ${data.graphs.why_off}`));
  const colour = (v) => (v.name.startsWith("swapped") ? "#16a34a" : "#2563eb");
  KE.plot("latency", [
    {type: "bar", name: "median", x: ok.map((v) => v.label), y: ok.map((v) => v.median_ms), marker: {color: ok.map(colour)}},
    {type: "bar", name: "p90", x: ok.map((v) => v.label), y: ok.map((v) => v.p90_ms), marker: {color: "#d1d5db"}},
  ], {title: {text: "forward latency (ms)", font: {size: 13}}, barmode: "group", yaxis: {title: {text: "ms"}}});
  KE.plot("throughput", [{type: "bar", name: "rows per second", x: ok.map((v) => v.label), y: ok.map((v) => v.throughput),
    marker: {color: ok.map(colour)}}], {title: {text: "throughput (rows per second, at the median)", font: {size: 13}}});
  KE.fill("variants-table", KE.table([["variant", (v) => v.label], ["status", (v) => KE.badge(v.status)],
    ["median", (v) => KE.ms(v.median_ms), "num"], ["p90", (v) => KE.ms(v.p90_ms), "num"],
    ["rows/s", (v) => KE.num(v.throughput), "num"], ["vs eager", (v) => KE.x(v.vs_eager), "num"],
    ["first call", (v) => (v.compile_s === null ? "-" : KE.num(v.compile_s) + " s"), "num"], ["error", (v) => v.error || "-"]], data.variants));

  const rows = a.rows;
  KE.plot("amdahl", [
    {type: "bar", name: "predicted end to end (row alone)", x: rows.map((r) => r.name), y: rows.map((r) => r.predicted), marker: {color: "#93c5fd"}},
    {type: "bar", name: "kernel speedup", x: rows.map((r) => r.name), y: rows.map((r) => r.kernel_speedup), marker: {color: "#2563eb"}},
    {type: "bar", name: "predicted together", x: ["all swapped rows"], y: [a.predicted], marker: {color: "#d1d5db"}},
    {type: "bar", name: "measured over eager", x: ["all swapped rows"], y: [a.measured_vs_eager], marker: {color: "#16a34a"}},
  ], {title: {text: "predicted and measured (x over eager)", font: {size: 13}}, barmode: "group",
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {color: "#ef4444", dash: "dot"}}]});
  const inModel = (r) => ({true: "yes", false: "no", null: "unknown"})[String(r.in_model)];
  KE.fill("amdahl-table", KE.table([["row", (r) => r.name], ["kind", (r) => r.kind], ["share", (r) => KE.pct(r.share), "num"],
    ["kernel speedup", (r) => KE.x(r.kernel_speedup), "num"], ["predicted end to end", (r) => KE.x(r.predicted), "num"],
    ["in the swapped model", inModel]], rows));

  E2E.section("notes-section", data.notes.length);
  KE.fill("notes", KE.el("ul", {class: "notes"}, data.notes.map((t) => KE.el("li", {text: t}))));
};

E2E.section = (id, shown) => { document.getElementById(id).style.display = shown ? "" : "none"; };

E2E.render(KE.data);
