// The bench report: one row per problem (linked to its run report), fast_p, the targets, and the roofline and HBM
// rules, as results.md has them, drawn.
"use strict";
const BENCH = {};

BENCH.caseNames = (cases) => {  // "problem #i", the i-th checked case of that problem; the shape goes in the hover
  const seen = {};
  return cases.map((c) => `${c.problem} #${(seen[c.problem] = (seen[c.problem] ?? -1) + 1)}`);
};
BENCH.hover = (cases, fmt) => ({customdata: cases.map((c) => KE.shape(c.shape)), hovertemplate: `%{x} (%{customdata}): %{y${fmt}}`});

BENCH.render = (data) => {
  const rows = data.rows, correct = rows.filter((r) => r.correct).length;
  const fp = data.fast_p;
  KE.fill("subtitle", `${data.suite} on ${data.target} · ${data.date} · ${data.baseline || ""}`);
  KE.fill("cards",
    KE.card("problems", String(rows.length), `${correct} correct`),
    ...fp.p.map((p, i) => KE.card(`fast_${p} over eager`, fp.eager[i].toFixed(2),
      fp.compile ? `over torch.compile ${fp.compile[i].toFixed(2)}` : null)),
    ...(data.scores ? [KE.card("BackendBench pass rate", data.scores.pass_rate.toFixed(2),
      Object.entries(data.scores.geomean_speedup).map(([b, v]) => `geomean ${KE.x(v)} over ${b}`).join("; "))] : []),
    KE.card("targets met", data.targets.length ? `${data.targets.filter((t) => t.met).length} of ${data.targets.length}` : "-"));

  KE.fill("rows-table", KE.table([
    ["problem", (r) => (r.report ? KE.el("a", {href: r.report, text: r.name}) : r.name)],
    ["status", (r) => KE.badge(r.status)],
    ["KernelBench's verdict", (r) => ({true: "correct", false: "incorrect", null: "-"})[String(r.kernelbench_correct)] || "-"],
    ["vs eager", (r) => KE.x(r.speedup_eager), "num"], ["vs torch.compile", (r) => KE.x(r.speedup_compile), "num"],
    ["vs the faster of the two", (r) => KE.x(r.speedup_best), "num"],
    ["worst case", (r) => KE.x(r.worst_case), "num"], ["roofline", (r) => (r.roofline ? KE.pct(r.roofline) : "-"), "num"],
    ["seed / run", (r) => `${r.seed || "-"}${r.run ? " / " + r.run : ""}`],
    ["search, or why not correct", (r) => (r.correct ? r.search : r.reason) || "-"]], rows));

  const names = rows.map((r) => r.name);
  KE.plot("speedups", [
    {type: "bar", name: "vs eager", x: names, y: rows.map((r) => r.speedup_eager), marker: {color: "#2563eb"}},
    {type: "bar", name: "vs torch.compile", x: names, y: rows.map((r) => r.speedup_compile), marker: {color: "#93c5fd"}},
    {type: "bar", name: "worst case vs eager", x: names, y: rows.map((r) => r.worst_case), marker: {color: "#f59e0b"}},
  ], {title: {text: "speedup per problem", font: {size: 13}}, barmode: "group", yaxis: {type: "log", title: {text: "x (log)"}},
    shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {color: "#ef4444", dash: "dot"}}]});
  const labels = fp.p.map((p) => `p = ${p}`);
  const fast = [{type: "bar", name: "over eager", x: labels, y: fp.eager, marker: {color: "#2563eb"}}];
  if (fp.compile) fast.push({type: "bar", name: "over torch.compile", x: labels, y: fp.compile, marker: {color: "#93c5fd"}});
  KE.plot("fast-p", fast, {title: {text: "fast_p: correct and more than p times faster", font: {size: 13}},
    barmode: "group", yaxis: {range: [0, 1], title: {text: "share of problems"}}});

  const targets = data.targets;
  BENCH.section("targets-section", targets.length);
  if (targets.length) {
    const tn = targets.map((t) => `${t.problem} #${t.case}`);
    KE.plot("targets", [
      {type: "bar", name: "target", x: tn, y: targets.map((t) => t.speedup), marker: {color: "#d1d5db"}},
      {type: "bar", name: "measured", x: tn, y: targets.map((t) => t.measured),
        marker: {color: targets.map((t) => (t.met ? "#16a34a" : "#dc2626"))}},
    ], {title: {text: "target against measured (green: met)", font: {size: 13}}, barmode: "group", yaxis: {type: "log", title: {text: "x over eager (log)"}}});
    KE.fill("targets-table", KE.table([["problem", (t) => t.problem], ["target", (t) => KE.x(t.speedup), "num"],
      ["case", (t) => KE.shape(t.shape)], ["measured", (t) => KE.x(t.measured), "num"], ["met?", (t) => (t.met ? "yes" : "no")],
      ["the case's time", (t) => KE.ms(t.t_candidate_ms), "num"], ["floor", (t) => KE.ms(t.t_roofline_ms), "num"],
      ["device copy", (t) => KE.ms(t.t_copy_ms), "num"], ["target's source", (t) => t.note || "-"]], targets));
  }

  const roof = data.roofline_rule, rc = roof.cases;
  BENCH.section("roofline-section", rc.length);
  KE.fill("roofline-note", `where torch.compile is ${roof.compile_above}x or more above a case's floor, the kernel within ${roof.within}x of it: ` +
    `${rc.filter((c) => c.met).length} of ${rc.length} cases`);
  if (rc.length) {
    const rn = BENCH.caseNames(rc), rh = BENCH.hover(rc, ":.3g");
    KE.plot("roofline", [
      {type: "bar", name: "torch.compile / floor", x: rn, y: rc.map((c) => c.compile_over_floor), marker: {color: "#d1d5db"}, ...rh},
      {type: "bar", name: "kernel / floor", x: rn, y: rc.map((c) => c.kernel_over_floor), marker: {color: rc.map((c) => (c.met ? "#16a34a" : "#2563eb"))}, ...rh},
      {type: "bar", name: "device copy / floor", x: rn, y: rc.map((c) => c.copy_over_floor), marker: {color: "#f59e0b"}, ...rh},
    ], {title: {text: "time over the roofline floor (log scale)", font: {size: 13}}, barmode: "group", yaxis: {type: "log", title: {text: "x the floor"}},
      shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: roof.within, y1: roof.within, line: {color: "#16a34a", dash: "dot"}}]});
    KE.fill("roofline-table", KE.table([["problem", (c) => c.problem], ["case", (c) => KE.shape(c.shape)],
      ["torch.compile / floor", (c) => KE.x(c.compile_over_floor), "num"], ["kernel / floor", (c) => KE.x(c.kernel_over_floor), "num"],
      ["device copy / floor", (c) => KE.x(c.copy_over_floor), "num"], ["within?", (c) => (c.met ? "yes" : "no")],
      ["where not, why", (c) => c.why]], rc));
  }

  const hbm = data.hbm_rule, hc = hbm.cases;
  BENCH.section("hbm-section", hc.length);
  KE.fill("hbm-note", `memory-bound cases at ${(100 * hbm.share).toFixed(0)}% of the measured bandwidth or more: ${hc.filter((c) => c.met).length} of ${hc.length} cases`);
  if (hc.length) {
    const hn = BENCH.caseNames(hc), hh = BENCH.hover(hc, ":.0%");
    KE.plot("hbm", [
      {type: "bar", name: "kernel's share of the measured bandwidth", x: hn, y: hc.map((c) => c.share), marker: {color: hc.map((c) => (c.met ? "#16a34a" : "#2563eb"))}, ...hh},
      {type: "bar", name: "a device copy's share", x: hn, y: hc.map((c) => c.copy_share), marker: {color: "#f59e0b"}, ...hh},
    ], {title: {text: "share of the measured HBM bandwidth", font: {size: 13}}, barmode: "group", yaxis: {tickformat: ".0%", range: [0, 1.05]},
      shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: hbm.share, y1: hbm.share, line: {color: "#16a34a", dash: "dot"}}]});
    KE.fill("hbm-table", KE.table([["problem", (c) => c.problem], ["case", (c) => KE.shape(c.shape)],
      ["kernel's share", (c) => KE.pct(c.share), "num"], ["device copy's share", (c) => KE.pct(c.copy_share), "num"],
      ["reached?", (c) => (c.met ? "yes" : "no")], ["where not, why", (c) => c.why]], hc));
  }

  const reviewed = rows.flatMap((r) => r.review.map((note) => `${r.name}: ${note}`));
  BENCH.section("review-section", reviewed.length);
  KE.fill("review", KE.el("ul", {class: "notes"}, reviewed.map((t) => KE.el("li", {text: t}))));
};

BENCH.section = (id, shown) => { document.getElementById(id).style.display = shown ? "" : "none"; };

BENCH.render(KE.data);
