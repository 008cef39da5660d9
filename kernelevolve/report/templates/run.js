// The run report: fitness charts, the search graph, a node's record, the shape cases and the LLM accounting.
"use strict";
const RUN = {colorBy: "kind", selected: null, details: {}};

RUN.label = (n) => `node ${n.step} (${n.kind}) ${n.status}` + (n.correct ? `, fitness ${KE.num(n.fitness)}` : "") +
  (n.reason ? `<br>${n.reason.slice(0, 120).replace(/[<>&]/g, " ")}` : "");

RUN.groups = (nodes) => {  // one trace per colour: by the step's kind or by status
  const by = RUN.colorBy, groups = new Map();
  const order = by === "kind" ? Object.keys(KE.kinds) : Object.keys(KE.statuses);
  for (const n of nodes) {
    const key = n[by];
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(n);
  }
  return [...groups.entries()].sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
};

RUN.fitnessTraces = (nodes, xkey) => {
  const map = RUN.colorBy === "kind" ? KE.kinds : KE.statuses;
  const traces = [];
  for (const [key, group] of RUN.groups(nodes)) {  // per colour, correct nodes then failed ones (crosses at 0)
    for (const correct of [true, false]) {
      const part = group.filter((n) => n.correct === correct);
      if (!part.length) continue;
      traces.push({type: "scatter", mode: "markers", name: key, legendgroup: key,
        showlegend: correct || !group.some((n) => n.correct),
        x: part.map((n) => n[xkey]), y: part.map((n) => (correct ? n.fitness : 0)),
        customdata: part.map((n) => n.step), text: part.map(RUN.label), hovertemplate: "%{text}<extra></extra>",
        marker: {color: KE.color(map, key), size: correct ? 9 : 8, symbol: correct ? "circle" : "x",
          line: {color: "#fff", width: correct ? 1 : 0}}});
    }
  }
  const line = nodes.filter((n) => n.best_so_far !== null && n[xkey] !== null);
  traces.push({type: "scatter", mode: "lines", name: "best so far", x: line.map((n) => n[xkey]),
    y: line.map((n) => n.best_so_far), line: {shape: "hv", color: "#111827", width: 2}, hoverinfo: "skip"});
  return traces;
};

RUN.drawFitness = (data) => {
  const layout = (title, xtitle) => ({title: {text: title, font: {size: 13}}, xaxis: {title: {text: xtitle}, zeroline: false},
    yaxis: {title: {text: "fitness (speedup over the baseline)"}, rangemode: "tozero"}});
  RUN.clickable(KE.plot("fitness-steps", RUN.fitnessTraces(data.nodes, "step"), layout("over steps", "node")));
  const last = Math.max(0, ...data.nodes.map((n) => n.t_s || 0));
  const [unit, scale] = last > 3 * 3600 ? ["hours", 3600] : last > 180 ? ["minutes", 60] : ["seconds", 1];
  const timed = data.nodes.map((n) => ({...n, t: n.t_s === null ? null : n.t_s / scale}));
  RUN.clickable(KE.plot("fitness-time", RUN.fitnessTraces(timed, "t"), layout("over wall time", `${unit} since the run started`)));
};

RUN.drawGraph = (data) => {
  const nodes = data.nodes, at = new Map(nodes.map((n) => [n.step, n]));
  const edges = {first: {x: [], y: []}, second: {x: [], y: []}};
  for (const n of nodes) {
    n.parents.forEach((p, i) => {
      const parent = at.get(p);
      if (!parent) return;
      const e = i === 0 ? edges.first : edges.second;
      e.x.push(parent.x, n.x, null);
      e.y.push(parent.depth, n.depth, null);
    });
  }
  const correct = nodes.filter((n) => n.correct), failed = nodes.filter((n) => !n.correct);
  const fitness = correct.map((n) => n.fitness || 0);
  const labels = nodes.length <= 80;
  const traces = [
    {type: "scatter", mode: "lines", name: "parent", x: edges.first.x, y: edges.first.y, hoverinfo: "skip",
      line: {color: "#cbd5e1", width: 1.5}, showlegend: false},
    {type: "scatter", mode: "lines", name: "crossover's second parent", x: edges.second.x, y: edges.second.y,
      hoverinfo: "skip", line: {color: "#db2777", width: 1.5, dash: "dash"}},
    {type: "scatter", mode: labels ? "markers+text" : "markers", name: "correct", x: correct.map((n) => n.x),
      y: correct.map((n) => n.depth), text: correct.map((n) => String(n.step)), textposition: "middle right",
      textfont: {size: 10, color: "#374151"}, customdata: correct.map((n) => n.step),
      hovertext: correct.map(RUN.label), hovertemplate: "%{hovertext}<extra></extra>",
      marker: {size: 14, color: fitness, colorscale: "Viridis", cmin: 0, cmax: Math.max(1, ...fitness),
        line: {color: "#fff", width: 1}, colorbar: {title: {text: "fitness"}, thickness: 12, len: 0.6}}},
  ];
  for (const [status, group] of RUN.groupsBy(failed, "status")) {
    traces.push({type: "scatter", mode: labels ? "markers+text" : "markers", name: status,
      x: group.map((n) => n.x), y: group.map((n) => n.depth), text: group.map((n) => String(n.step)),
      textposition: "middle right", textfont: {size: 10, color: "#6b7280"}, customdata: group.map((n) => n.step),
      hovertext: group.map(RUN.label), hovertemplate: "%{hovertext}<extra></extra>",
      marker: {size: 12, color: KE.color(KE.statuses, status), symbol: KE.symbols[status] || "x",
        line: {color: KE.color(KE.statuses, status), width: 2}}});
  }
  const best = data.best ? at.get(data.best.step) : null;
  if (best) {
    traces.push({type: "scatter", mode: "markers", name: "best", x: [best.x], y: [best.depth], customdata: [best.step],
      hovertext: [RUN.label(best)], hovertemplate: "%{hovertext}<extra></extra>",
      marker: {size: 26, color: "#f59e0b", symbol: "star-open", line: {color: "#f59e0b", width: 2.5}}});
  }
  const selected = RUN.selected !== null ? at.get(RUN.selected) : null;
  if (selected) {
    traces.push({type: "scatter", mode: "markers", name: "selected", x: [selected.x], y: [selected.depth],
      customdata: [selected.step], hoverinfo: "skip", showlegend: false,
      marker: {size: 28, color: "#ef4444", symbol: "circle-open", line: {color: "#ef4444", width: 3}}});
  }
  RUN.clickable(KE.plot("graph", traces, {margin: {l: 56, r: 10, t: 10, b: 40},
    xaxis: {visible: false}, yaxis: {autorange: "reversed", title: {text: "depth"}, zeroline: false, dtick: 1},
    legend: {orientation: "h", y: -0.04}}));
};

RUN.groupsBy = (nodes, key) => {
  const groups = new Map();
  for (const n of nodes) {
    if (!groups.has(n[key])) groups.set(n[key], []);
    groups.get(n[key]).push(n);
  }
  return [...groups.entries()];
};

RUN.clickable = (div) => {
  if (!div || div.dataset.clickable) return;
  div.dataset.clickable = "1";
  div.on("plotly_click", (event) => {
    const point = event.points && event.points[0];
    if (point && point.customdata !== undefined) RUN.open(point.customdata);
  });
};

RUN.open = async (step) => {
  RUN.selected = step;
  RUN.drawGraph(KE.data);
  const panel = KE.fill("node", KE.el("p", {class: "muted", text: `node ${step}: loading`}));
  let d = KE.data.details[String(step)] || RUN.details[String(step)];
  if (!d && KE.live) {
    const response = await fetch(KE.live.node_url + step, {cache: "no-store"});
    d = response.ok ? await response.json() : null;
    if (d) RUN.details[String(step)] = d;
  }
  if (RUN.selected !== step) return;  // another node was clicked meanwhile
  if (!d) { panel.replaceChildren(KE.el("p", {class: "empty", text: `node ${step}: no record`})); return; }
  panel.replaceChildren(...RUN.nodeView(d));
  panel.scrollTop = 0;
};

RUN.pre = (text, cls) => KE.el("pre", {class: cls}, text === null || text === undefined ? "(the file is missing)" : text);

RUN.diff = (text) => {
  const pre = KE.el("pre", {class: "diff"});
  for (const line of text.split("\n")) {
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") && !line.startsWith("+++") ? "add"
      : line.startsWith("-") && !line.startsWith("---") ? "del" : null;
    pre.append(KE.el("span", {class: cls}, line + "\n"));
  }
  return pre;
};

RUN.section = (title, open, ...body) => KE.el("details", {open: open ? true : null},
  KE.el("summary", {text: title}), ...body);

RUN.nodeView = (d) => {
  const ev = d.evaluation;
  const out = [
    KE.el("h3", {id: "node-title"}, `node ${d.step} `, KE.badge(d.kind), " ", KE.badge(d.status),
      d.correct ? `  fitness ${KE.num(d.fitness)}` : ""),
    KE.el("div", {class: "meta"}, "parents: ", d.parents.length ? d.parents.flatMap((p, i) => [i ? ", " : "",
      KE.el("a", {class: "node-link", onclick: () => RUN.open(p.step), text: `node ${p.step} (${p.operator})`})])
      : "none (a starting point of the run)"),
    KE.el("div", {class: "meta", text: `params: ${JSON.stringify(d.params)}`}),
    d.reused ? KE.el("div", {class: "meta", text: d.reused}) : null,
    KE.el("div", {class: "meta", text: `files: ${d.folder}: ${d.files ? d.files.join(", ") : "(missing)"}`}),
    d.reason ? KE.el("div", {class: "meta", text: `reason: ${d.reason}`}) : null,
    RUN.section("source", true, KE.el("div", {class: "meta", text: d.kernel}), RUN.pre(d.source, "source")),
  ];
  for (const diff of d.diffs) {
    out.push(RUN.section(`diff from node ${diff.parent} (${diff.operator}), the parent`, false,
      diff.text === null ? KE.el("p", {text: "(a source file is missing)"})
        : diff.text ? RUN.diff(diff.text) : KE.el("p", {text: "(no textual difference)"})));
  }
  out.push(RUN.section("evaluation", true, ev ? RUN.evaluation(ev) : KE.el("p", {text: "(no evaluation stored)"})));
  if (d.log) out.push(RUN.section("log (its last lines)", false, RUN.pre(d.log)));
  const analysis = Object.entries(d.analysis || {}).filter(([, v]) => v !== null && v !== "" &&
    !(Array.isArray(v) && !v.length) && !(typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length));
  out.push(RUN.section("analysis (memory agent)", true, analysis.length ? KE.el("dl", {class: "kv"},
    analysis.flatMap(([k, v]) => [KE.el("dt", {text: k}), KE.el("dd", {},
      Array.isArray(v) ? KE.el("ul", {class: "notes"}, v.map((item) => KE.el("li", {text: String(item)})))
        : typeof v === "object" ? JSON.stringify(v) : String(v))])) : KE.el("p", {text: "(none stored)"})));
  out.push(RUN.section(`documents retrieved (${d.knowledge.length})`, d.knowledge.length > 0,
    d.knowledge.length ? KE.el("ul", {class: "notes"}, d.knowledge.map((k) => KE.el("li", {text: k})))
      : KE.el("p", {text: "(none: not an LLM step, or nothing was retrieved)"})));
  const call = d.llm_call;
  if (call) {
    out.push(RUN.section(`LLM call ${call.seq}: ${call.model}, ${call.outcome || "-"}, ${call.prompt_tokens} prompt and ` +
      `${call.completion_tokens} completion tokens, ${call.cost.toFixed(4)} USD, ${call.latency_s.toFixed(1)} s`, true,
      KE.el("div", {class: "meta", text: `prompt: ${call.prompt_file}`}), RUN.pre(call.prompt, "prompt"),
      KE.el("div", {class: "meta", text: `answer: ${call.answer_file}`}), RUN.pre(call.answer, "answer")));
  }
  return out.filter((x) => x);
};

RUN.evaluation = (ev) => {
  const head = KE.el("div", {class: "meta"}, `status ${ev.status}, correct ${ev.correct}, baseline ${ev.baseline}, ` +
    `fitness ${KE.num(ev.fitness)}, speedup ${KE.x(ev.speedup)}` +
    (ev.speedup_compile ? `, over torch.compile ${KE.x(ev.speedup_compile)}` : "") + (ev.device ? `; ${ev.device}` : ""));
  const notes = [...(ev.reason ? [`reason: ${ev.reason}`] : []), ...(ev.review || []).map((r) => `review: ${r}`),
    ...(ev.compile_baseline ? [`torch.compile: ${ev.compile_baseline}`] : [])];
  const cases = ev.cases || [];
  const has = (k) => cases.some((c) => c[k] !== null && c[k] !== undefined);
  const columns = [["case", (c) => cases.indexOf(c)], ["shape", (c) => KE.shape(c.shape)],
    ["correct", (c) => String(c.correct)]];
  if (has("error_ratio")) columns.push(["error / budget", (c) => KE.num(c.error_ratio), "num"]);
  columns.push(["max abs err", (c) => KE.num(c.max_abs_err), "num"], ["max rel err", (c) => KE.num(c.max_rel_err), "num"],
    ["kernel", (c) => KE.ms(c.t_candidate_ms), "num"], ["eager", (c) => KE.ms(c.t_eager_ms), "num"]);
  if (has("t_compile_ms")) columns.push(["compile", (c) => KE.ms(c.t_compile_ms), "num"]);
  columns.push(["vs eager", (c) => KE.x(c.speedup_eager), "num"]);
  if (has("t_compile_ms")) columns.push(["vs compile", (c) => KE.x(c.speedup_compile), "num"]);
  if (has("t_roofline_ms")) columns.push(["floor", (c) => KE.ms(c.t_roofline_ms), "num"]);
  if (has("t_copy_ms")) columns.push(["copy", (c) => KE.ms(c.t_copy_ms), "num"]);
  if (cases.some((c) => c.reason)) columns.push(["reason", (c) => c.reason || "-"]);
  return KE.el("div", {}, head, notes.length ? KE.el("ul", {class: "notes"}, notes.map((t) => KE.el("li", {text: t}))) : null,
    cases.length ? KE.el("div", {style: "overflow:auto"}, KE.table(columns, cases)) : null);
};

RUN.drawCases = (data) => {
  const cases = data.cases;
  if (!cases.length) {
    KE.fill("cases-note", "no correct kernel yet: nothing measured per case");
    KE.fill("cases-table");
    for (const id of ["cases-speedup", "cases-time"]) { const e = document.getElementById(id); if (e) Plotly.purge(e); e.style.display = "none"; }
    return;
  }
  for (const id of ["cases-speedup", "cases-time"]) document.getElementById(id).style.display = "";
  const names = cases.map((c) => `case ${c.case}`);
  const shapes = cases.map((c) => KE.shape(c.shape));
  const hover = (unit) => ({customdata: shapes, hovertemplate: `%{x} (%{customdata}): %{y:.3g}${unit}`});
  const get = (c, side, key) => (c[side] ? c[side][key] : null);
  const series = (side, key) => cases.map((c) => get(c, side, key));
  const any = (side, key) => series(side, key).some((v) => v !== null && v !== undefined);
  const best = data.best ? `node ${data.best.step}` : "the best";
  const speedups = [];
  speedups.push({type: "bar", name: `best kernel (${best}) vs eager`, x: names, y: series("best", "speedup_eager"), marker: {color: "#2563eb"}, ...hover("x")});
  if (any("best", "speedup_compile")) speedups.push({type: "bar", name: "best kernel vs torch.compile", x: names, y: series("best", "speedup_compile"), marker: {color: "#93c5fd"}, ...hover("x")});
  speedups.push({type: "bar", name: "export: kernel serving the case", x: names,
    y: cases.map((c) => (c.export ? c.export.speedup : 1)), marker: {color: "#16a34a"},
    text: cases.map((c) => (c.export ? `node ${c.export.node}` : "reference")), textposition: "outside",
    hovertemplate: "%{text}: %{y:.3g}x<extra></extra>"});
  if (any("exported", "speedup_eager")) speedups.push({type: "bar", name: "exported module vs eager (measured)", x: names, y: series("exported", "speedup_eager"), marker: {color: "#86efac"}, ...hover("x")});
  if (any("exported", "speedup_compile")) speedups.push({type: "bar", name: "exported module vs torch.compile", x: names, y: series("exported", "speedup_compile"), marker: {color: "#d9f99d"}, ...hover("x")});
  KE.plot("cases-speedup", speedups, {title: {text: "speedup per shape case", font: {size: 13}}, barmode: "group",
    yaxis: {title: {text: "speedup (x)"}}, shapes: [{type: "line", xref: "paper", x0: 0, x1: 1, y0: 1, y1: 1, line: {color: "#ef4444", dash: "dot"}}]});
  const side = any("exported", "t_candidate_ms") ? "exported" : "best";
  const times = [
    {type: "bar", name: side === "exported" ? "exported module" : "best kernel", x: names, y: series(side, "t_candidate_ms"), marker: {color: "#2563eb"}, ...hover(" ms")},
    {type: "bar", name: "eager", x: names, y: series(side, "t_eager_ms"), marker: {color: "#9ca3af"}, ...hover(" ms")},
  ];
  if (any(side, "t_compile_ms")) times.push({type: "bar", name: "torch.compile", x: names, y: series(side, "t_compile_ms"), marker: {color: "#d1d5db"}, ...hover(" ms")});
  for (const [key, name, color, symbol] of [["t_roofline_ms", "roofline floor", "#dc2626", "line-ew-open"], ["t_copy_ms", "device copy of its bytes", "#f59e0b", "line-ew-open"]]) {
    if (any(side, key) || any("best", key)) {
      const y = any(side, key) ? series(side, key) : series("best", key);
      times.push({type: "scatter", mode: "markers", name, x: names, y, marker: {color, symbol, size: 30, line: {width: 3, color}}, ...hover(" ms")});
    }
  }
  KE.plot("cases-time", times, {title: {text: "time per call (log scale)", font: {size: 13}}, barmode: "group",
    yaxis: {title: {text: "ms"}, type: "log"}});
  const measured = side === "exported" ? "the exported module's measurement (bench)" : `node ${data.best ? data.best.step : "-"}'s evaluation`;
  KE.fill("cases-note", `times from ${measured}; the export serves each case with the fastest correct kernel measured on it, the reference where none beat it`);
  const columns = [["case", (c) => c.case], ["shape", (c) => KE.shape(c.shape)],
    ["served by", (c) => (c.export ? KE.el("a", {class: "node-link", onclick: () => RUN.open(c.export.node), text: `node ${c.export.node}`}) : "reference")],
    ["its speedup", (c) => (c.export ? KE.x(c.export.speedup) : "-"), "num"],
    ["best: kernel", (c) => KE.ms(get(c, "best", "t_candidate_ms")), "num"], ["eager", (c) => KE.ms(get(c, "best", "t_eager_ms")), "num"],
    ["compile", (c) => KE.ms(get(c, "best", "t_compile_ms")), "num"], ["vs eager", (c) => KE.x(get(c, "best", "speedup_eager")), "num"],
    ["vs compile", (c) => KE.x(get(c, "best", "speedup_compile")), "num"],
    ["floor", (c) => KE.ms(get(c, "best", "t_roofline_ms") ?? get(c, "exported", "t_roofline_ms")), "num"],
    ["copy", (c) => KE.ms(get(c, "exported", "t_copy_ms") ?? get(c, "best", "t_copy_ms")), "num"]];
  if (any("exported", "t_candidate_ms")) {
    columns.push(["exported: time", (c) => KE.ms(get(c, "exported", "t_candidate_ms")), "num"],
      ["vs eager", (c) => KE.x(get(c, "exported", "speedup_eager")), "num"], ["vs compile", (c) => KE.x(get(c, "exported", "speedup_compile")), "num"]);
  }
  KE.fill("cases-table", KE.table(columns, cases));
};

RUN.drawLLM = (data) => {
  const llm = data.llm, a = llm.answers;
  if (!llm.models.length && !a.pending) {
    KE.fill("llm-table", KE.el("p", {class: "muted", text: "no LLM calls in this run (the tune operator only)"}));
    const e = document.getElementById("llm-funnel"); Plotly.purge(e); e.style.display = "none";
    return;
  }
  document.getElementById("llm-funnel").style.display = "";
  KE.fill("llm-table", KE.table([["model", (m) => m.model || "(unreached)"], ["calls", (m) => m.calls, "num"],
    ["failed", (m) => m.failed, "num"], ["prompt tokens", (m) => m.prompt_tokens, "num"],
    ["completion tokens", (m) => m.completion_tokens, "num"], ["cost USD", (m) => m.cost.toFixed(4), "num"],
    ["mean latency", (m) => (m.mean_latency_s === null ? "-" : m.mean_latency_s.toFixed(2) + " s"), "num"]], llm.models),
  KE.el("ul", {class: "notes"},
    KE.el("li", {text: `answers parsed ${a.parsed} of ${a.answered}, compiled ${a.compiled} of ${a.evaluated} evaluated, correct ${a.correct} of ${a.evaluated}`}),
    KE.el("li", {text: `duplicates (a known kernel) ${a.duplicates}, errors (no answer) ${a.errors}, pending ${a.pending}`}),
    KE.el("li", {text: `total: ${llm.tokens} tokens, ${llm.cost.toFixed(4)} USD`})));
  KE.plot("llm-funnel", [{type: "funnel", y: ["calls", "answered", "parsed", "evaluated", "compiled", "correct"],
    x: [a.calls, a.answered, a.parsed, a.evaluated, a.compiled, a.correct], marker: {color: "#2563eb"}, textinfo: "value"}],
  {title: {text: "what the answers became", font: {size: 13}}, margin: {l: 90, r: 16, t: 34, b: 20}});
};

RUN.drawCards = (data) => {
  const r = data.run, failed = data.nodes.filter((n) => !n.correct).length;
  const statuses = Object.entries(data.statuses).filter(([s]) => s !== "ok").map(([s, k]) => `${s} ${k}`).join(", ");
  KE.fill("cards",
    KE.card("status", r.status, r.stop_reason || null),
    KE.card("nodes", `${data.nodes.length}`, failed ? `${failed} not correct: ${statuses}` : "all correct"),
    KE.card("best fitness", data.best ? KE.x(data.best.fitness) : "-", data.best ? `node ${data.best.step} (${data.best.kind}); lineage ${data.best.lineage.join(" <- ")}` : "no correct kernel yet"),
    KE.card("best vs torch.compile", data.best && data.best.speedup_compile ? KE.x(data.best.speedup_compile) : "-", "geometric mean over the cases"),
    KE.card("LLM", `${data.llm.answers.calls} calls`, `${data.llm.tokens} tokens, ${data.llm.cost.toFixed(2)} USD`),
    KE.card("search", r.strategy || "-", `${r.platform}; ${r.elapsed_s.toFixed(0)} s of search; budget ${r.budget}`));
  KE.fill("subtitle", `run ${r.id} · ${r.platform} · ${r.strategy} · ${r.llm.length ? r.llm.join(", ") : "no LLM"}`);
  document.title = `${r.problem}: run ${r.id}`;
};

RUN.drawNodes = (data) => {
  KE.fill("nodes-table", KE.table([["node", (n) => n.step, "num"], ["kind", (n) => n.kind], ["parents", (n) => n.parents.join(", ") || "-"],
    ["status", (n) => KE.badge(n.status)], ["fitness", (n) => (n.correct ? KE.num(n.fitness) : "-"), "num"],
    ["params", (n) => JSON.stringify(n.params)], ["reason", (n) => n.reason || "-"]], data.nodes, (n) => RUN.open(n.step)));
};

RUN.render = (data) => {
  if (KE.data.version !== data.version) RUN.details = {};
  if (!data.details || !Object.keys(data.details).length) data.details = KE.data.details || {};
  KE.data = data;
  RUN.drawCards(data);
  RUN.drawFitness(data);
  RUN.drawGraph(data);
  RUN.drawCases(data);
  RUN.drawLLM(data);
  RUN.drawNodes(data);
  document.body.dataset.nodes = String(data.nodes.length);
};

document.querySelectorAll("#color-by button").forEach((b) => b.addEventListener("click", () => {
  RUN.colorBy = b.dataset.by;
  document.querySelectorAll("#color-by button").forEach((o) => o.classList.toggle("on", o === b));
  RUN.drawFitness(KE.data);
}));
RUN.render(KE.data);
KE.poll(RUN.render);
