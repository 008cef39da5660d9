// The live view's front page: every run of the store, newest first, refreshed as runs start and grow.
"use strict";
const INDEX = {};

INDEX.render = (data) => {
  KE.data = data;
  const running = data.runs.filter((r) => r.status === "running").length;
  KE.fill("runs-note", `${data.runs.length} runs, ${running} running; click a run to follow it`);
  KE.fill("runs-table", data.runs.length ? KE.table([
    ["problem", (r) => KE.el("a", {href: r.url, text: r.problem})], ["platform", (r) => r.platform],
    ["strategy", (r) => r.strategy || "-"], ["status", (r) => KE.badge(r.status)], ["nodes", (r) => r.nodes, "num"],
    ["best fitness", (r) => KE.x(r.best), "num"], ["started", (r) => (r.created || "-").replace("T", " ")],
    ["updated", (r) => (r.updated || "-").replace("T", " ")], ["run", (r) => r.id], ["stop reason", (r) => r.stop_reason || "-"],
  ], data.runs, (r) => { window.location.href = r.url; }) : KE.el("p", {class: "muted", text: "no runs in this store yet"}));
};

INDEX.render(KE.data);
KE.poll(INDEX.render);
