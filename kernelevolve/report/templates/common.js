// What every page shares: its data, formatting, small DOM builders, colours and the live view's polling.
"use strict";
const KE = {
  data: JSON.parse(document.getElementById("report-data").textContent),
  live: JSON.parse(document.getElementById("report-live").textContent),  // null: a file, no server behind it
  config: {displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"]},
  kinds: {
    "seed": "#111827", "start": "#4b5563", "warm-start": "#9ca3af", "draft": "#2563eb", "refine": "#16a34a",
    "debug": "#d97706", "tune": "#7c3aed", "crossover": "#db2777",
  },
  statuses: {
    "ok": "#16a34a", "incorrect": "#ea580c", "compile_error": "#dc2626", "runtime_error": "#9333ea",
    "timeout": "#a16207", "crashed": "#111827", "rejected": "#6b7280", "harness_limit": "#db2777",
  },
  symbols: {
    "incorrect": "triangle-up", "compile_error": "x", "runtime_error": "diamond", "timeout": "hourglass",
    "crashed": "square", "rejected": "circle-open", "harness_limit": "star-triangle-up",
  },
};

KE.color = (map, key) => map[key] || "#0ea5e9";

KE.num = (v, digits = 3) => {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  if (typeof v !== "number") return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2);
  return Number(v.toPrecision(digits)).toString();
};
KE.x = (v) => (v ? KE.num(v) + "x" : "-");
KE.pct = (v) => (v === null || v === undefined ? "-" : (100 * v).toFixed(0) + "%");
KE.ms = (v) => {  // a floor can be nanoseconds, a kernel milliseconds
  if (v === null || v === undefined) return "-";
  return v < 1 ? KE.num(1000 * v) + " us" : KE.num(v) + " ms";
};
KE.shape = (s) => Object.entries(s || {}).map(([k, v]) => `${k}=${v}`).join(" ") || "-";

KE.el = (tag, attrs, ...children) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
};

KE.badge = (word) => KE.el("span", {class: `badge ${word}`, text: word});

// columns: [label, cell(row) -> text | Node, "num"?]; onclick(row): rows become clickable
KE.table = (columns, rows, onclick) => KE.el("table", {},
  KE.el("thead", {}, KE.el("tr", {}, columns.map(([label, , cls]) => KE.el("th", {class: cls, text: label})))),
  KE.el("tbody", {}, rows.map((r) => KE.el("tr", {class: onclick ? "clickable" : null, onclick: onclick ? () => onclick(r) : null},
    columns.map(([, cell, cls]) => {
      const v = cell(r);
      return KE.el("td", {class: cls}, v instanceof Node ? v : (v === null || v === undefined ? "-" : String(v)));
    })))));

KE.card = (label, value, more) => KE.el("div", {class: "card"},
  KE.el("div", {class: "label", text: label}), KE.el("div", {class: "value", text: value}),
  more ? KE.el("div", {class: "more", text: more}) : null);

KE.fill = (id, ...children) => {
  const e = document.getElementById(id);
  if (e) e.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined));
  return e;
};

KE.plot = (id, traces, layout) => {
  const e = document.getElementById(id);
  if (!e) return null;
  const base = {margin: {l: 56, r: 16, t: 34, b: 84}, font: {size: 12}, legend: {orientation: "h", y: -0.3},
    hovermode: "closest", paper_bgcolor: "#fff", plot_bgcolor: "#fff"};
  Plotly.react(e, traces, Object.assign(base, layout), KE.config);
  return e;
};

// The live view: fetch the page's data every interval; render(data) redraws when its version changed.
KE.poll = (render) => {
  if (!KE.live) return;
  const badge = document.getElementById("live");
  const tick = async () => {
    try {
      const response = await fetch(KE.live.data_url, {cache: "no-store"});
      if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
      const data = await response.json();
      if (data.version !== KE.data.version) render(data);
      if (badge) { badge.textContent = `live: updated ${new Date().toLocaleTimeString()}`; badge.classList.remove("stale"); }
    } catch (e) {
      if (badge) { badge.textContent = `live: cannot reach the server (${e.message})`; badge.classList.add("stale"); }
    }
  };
  setInterval(tick, KE.live.interval_ms);
};
