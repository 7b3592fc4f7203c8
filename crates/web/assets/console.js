// The sluice console. Every name from the graph is put into the page with textContent (never
// as HTML). The token comes from the address's fragment, which the browser never sends.
"use strict";
const token = new URLSearchParams(location.hash.slice(1)).get("token") || sessionStorage.getItem("sluice-token") || "";
if (token) sessionStorage.setItem("sluice-token", token);
const $ = (id) => document.getElementById(id);
const el = (tag, text, cls) => { const e = document.createElement(tag); if (text !== undefined) e.textContent = text; if (cls) e.className = cls; return e; };
let graph = null;
let last = null;

function showError(msg) { $("error").textContent = msg || ""; }

async function post(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}

// A server-sent event stream from POST `path` (read through fetch, which can send the token
// that EventSource cannot); `onEvent(name, object)` per event. Reconnects after the server's
// `retry:` when the stream ends, until aborted. Returns an AbortController.
function stream(path, body, onEvent) {
  const ctl = new AbortController();
  let retry = 2000;
  const dispatch = (block) => {
    let name = "message"; const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;  // a comment: the keep-alive
      const i = line.indexOf(":"); const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1); if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
      else if (field === "retry" && /^\d+$/.test(value)) retry = Number(value);
    }
    if (data.length) onEvent(name, JSON.parse(data.join("\n")));
  };
  const run = async () => {
    const r = await fetch(path, { method: "POST", signal: ctl.signal, headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!r.ok) { const j = await r.json().catch(() => ({})); showError(j.error || r.statusText); return false; }
    const reader = r.body.getReader(); const dec = new TextDecoder(); let buf = "";
    for (;;) {
      const { value, done } = await reader.read(); if (done) return true;
      buf += dec.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let i; while ((i = buf.indexOf("\n\n")) >= 0) { const block = buf.slice(0, i); buf = buf.slice(i + 2); dispatch(block); }
    }
  };
  const loop = async () => {
    for (;;) {
      let again = false;
      try { again = await run(); } catch (e) { if (e.name === "AbortError") return; again = true; }
      if (!again || ctl.signal.aborted) return;
      await new Promise((ok) => setTimeout(ok, retry));
      if (ctl.signal.aborted) return;
    }
  };
  loop();
  return ctl;
}

async function loadGraph() {
  const r = await fetch("/api/graph"); graph = await r.json();
  $("title").textContent = graph.title;
  document.title = "sluice · " + graph.title;
  if (graph.mode === "cluster") {
    $("run-view").hidden = true; $("cluster-view").hidden = false;
    const c = await fetch("/api/cluster"); if (c.ok) onCluster(await c.json());
    return;
  }
  const edge = $("edge"); edge.textContent = "";
  for (const e of graph.edges) { const o = el("option", e.node + "." + e.port + " (" + e.type + ")"); o.value = e.node + "\u0000" + e.port; edge.appendChild(o); }
  const tbody = $("nodes").tBodies[0]; tbody.textContent = "";
  for (const n of graph.nodes) { const tr = el("tr"); tr.dataset.node = n.name; tr.appendChild(el("td", n.name)); for (let i = 0; i < 4; i++) tr.appendChild(el("td", "")); tbody.appendChild(tr); }
  const controls = $("controls"); controls.textContent = "";
  for (const n of graph.nodes) for (const c of n.controls) controls.appendChild(controlRow(n.name, c));
  if (!controls.childElementCount) controls.appendChild(el("div", "no parameter of this graph can be set while it runs", "muted"));
}

function controlRow(node, c) {
  const row = el("div", undefined, "control"); row.dataset.node = node; row.dataset.param = c.name;
  const label = el("span", node + "." + c.name); label.title = c.help + " (" + c.expects + ")";
  const slider = el("input"); slider.type = "range"; slider.min = -1; slider.max = 1; slider.step = "any"; slider.value = 0;
  const num = el("input"); num.type = "text"; num.placeholder = c.expects; num.className = "value";
  const btn = el("button", "Set");
  const applied = el("span", "", "applied");
  // The slider spans ±2× the last value set (a parameter declares no range).
  const rescale = (v) => { const m = Math.max(Math.abs(v) * 2, 1e-9); slider.min = -m; slider.max = m; slider.value = v; };
  const apply = async (text) => {
    try { const r = await post("/api/set", { node, param: c.name, value: text }); applied.textContent = "applied: " + r.value + " from item " + r.at; applied.dataset.at = r.at; showError(""); }
    catch (e) { applied.textContent = ""; showError(e.message); }
  };
  slider.addEventListener("change", () => { num.value = slider.value; apply(slider.value); });
  btn.addEventListener("click", () => { const v = Number(num.value); if (isFinite(v)) rescale(v); apply(num.value); });
  num.addEventListener("keydown", (e) => { if (e.key === "Enter") btn.click(); });
  row.append(label, slider, num, btn, applied);
  return row;
}

function drawGraph(stats) {
  const cv = $("graph"); const g = cv.getContext("2d");
  const W = cv.width = cv.clientWidth || 640; const H = cv.height;
  g.clearRect(0, 0, W, H);
  const nodes = graph.nodes; const pos = {}; const w = Math.min(140, W / Math.max(nodes.length, 1) - 20);
  nodes.forEach((n, i) => { pos[n.name] = { x: 10 + i * (W - 20) / nodes.length, y: 20 + (i % 2) * 60 }; });
  const fill = {}; for (const e of (stats ? stats.edges : [])) fill[e.node + "." + e.port] = e.fill / Math.max(e.capacity, 1);
  g.font = "12px system-ui";
  for (const e of graph.edges) for (const r of e.readers) {
    const a = pos[e.node], b = pos[r.node]; if (!a || !b) continue;
    const f = fill[e.node + "." + e.port] || 0;
    g.strokeStyle = "hsl(" + (120 - 120 * f) + ",70%,50%)"; g.lineWidth = 2 + 6 * f;
    g.beginPath(); g.moveTo(a.x + w, a.y + 20); g.lineTo(b.x, b.y + 20); g.stroke();
    g.fillStyle = "#9fb3c8"; g.fillText((100 * f).toFixed(0) + "%", (a.x + w + b.x) / 2 - 10, (a.y + b.y) / 2 + 14);
  }
  g.lineWidth = 1;
  for (const n of nodes) { const p = pos[n.name]; g.fillStyle = "#263042"; g.fillRect(p.x, p.y, w, 40); g.strokeStyle = "#4f6a8f"; g.strokeRect(p.x, p.y, w, 40); g.fillStyle = "#d8dde6"; g.fillText(n.name.slice(0, 20), p.x + 6, p.y + 24); }
}

function onStats(s) {
  const dt = last ? s.elapsed_s - last.elapsed_s : 0;
  for (const n of s.nodes) {
    const tr = document.querySelector('#nodes tr[data-node="' + CSS.escape(n.name) + '"]'); if (!tr) continue;
    const p = last && last.nodes.find((m) => m.name === n.name);
    const cells = tr.children;
    if (p && dt > 0) {
      cells[1].textContent = ((n.items_out - p.items_out) / dt).toExponential(2);
      cells[2].textContent = (100 * (n.busy_s - p.busy_s) / dt).toFixed(1);
      cells[3].textContent = (100 * (n.waiting_s - p.waiting_s) / dt).toFixed(1);
    }
    cells[4].textContent = n.items_out.toLocaleString("en");
  }
  const f = s.nodes.map((n) => n.fraction).filter((x) => x !== null);
  if (f.length) { const m = Math.max(...f); $("progress").firstElementChild.style.width = (100 * m) + "%"; $("fraction").textContent = (100 * m).toFixed(1) + " %"; }
  $("elapsed").textContent = s.elapsed_s.toFixed(1) + " s" + (s.stopping ? " · stopping" : "");
  showWarnings(s.warnings || []);
  showErrors(s.errors || []);
  drawGraph(s); last = s;
}

// The live warnings list, newest first; rebuilt only when an entry was added.
function showWarnings(w) {
  const ul = $("warnings");
  const key = w.length ? w.length + ":" + w[w.length - 1].node + ":" + w[w.length - 1].total + ":" + w[w.length - 1].kind : "0";
  if (ul.dataset.key === key) return;
  ul.dataset.key = key;
  ul.replaceChildren();
  if (!w.length) { ul.append(el("li", "none", "muted")); return; }
  for (const e of w.slice().reverse()) ul.append(el("li", e.elapsed_s.toFixed(1) + " s  " + e.node + ": " + e.text, "warning"));
}

// The nodes' errors as they fail, newest first (a failed node stops the graph: the list keeps
// what the last statistics said after the run ends).
function showErrors(errs) {
  const ul = $("errors");
  const key = String(errs.length);
  if (ul.dataset.key === key) return;
  ul.dataset.key = key;
  ul.replaceChildren();
  if (!errs.length) { ul.append(el("li", "none", "muted")); return; }
  for (const e of errs.slice().reverse()) { const li = el("li", e.elapsed_s.toFixed(1) + " s  " + e.text, "failure"); li.dataset.node = e.node; ul.append(li); }
}

// A cluster run: one card per host (state, CPU, its standby or primary, its nodes and their
// rates), and the failovers with their takeover records. Every name and message came from a
// worker: all of it goes in as text.
const fmtRate = (x) => x === null || x === undefined ? "" : x.toExponential(2);
const clock = (unix) => unix === null || unix === undefined ? "?" : new Date(unix * 1000).toISOString().slice(11, 23) + " UTC";

function hostCard(h) {
  const card = el("div", undefined, "host"); card.dataset.host = h.name;
  const bar = el("div", undefined, "bar");
  const state = el("span", h.state.replace("_", " "), "state " + h.state);
  const cpu = el("span", h.cpu_percent === null ? "CPU …" : "CPU " + h.cpu_percent.toFixed(0) + " %", "cpu");
  bar.append(el("strong", h.name, "name"), state, cpu);
  if (h.partner) bar.append(el("span", h.partner.role === "primary" ? "standby: " + h.partner.standby : "standby of " + h.partner.primary, "partner muted"));
  if (h.promoted) bar.append(el("span", "promoted at revision " + h.promoted.revision, "promoted"));
  bar.append(el("span", h.elapsed_s.toFixed(1) + " s · " + h.cpu_s.toFixed(2) + " CPU s", "muted"));
  card.append(bar);
  if (h.message) card.append(el("div", h.message, "message"));
  const table = el("table"); const head = el("tr");
  for (const t of ["node", "items/s out", "items in", "items out"]) head.append(el("th", t));
  table.append(head);
  for (const n of h.nodes) {
    const tr = el("tr"); tr.dataset.node = n.name;
    tr.append(el("td", n.name), el("td", fmtRate(n.items_per_s)), el("td", n.items_in.toLocaleString("en")), el("td", n.items_out.toLocaleString("en")));
    table.append(tr);
  }
  card.append(table);
  return card;
}

function failoverText(f) {
  let t = (f.seen_s === null ? "" : f.seen_s.toFixed(1) + " s  ") + "partition of " + f.partition + ": " +
    (f.took_over || "its standby") + " took over" + (f.failed ? " from " + f.failed : "") +
    " at lease revision " + f.revision + (f.from_revision === null ? "" : " (from " + f.from_revision + ")") +
    ", " + clock(f.unix_s);
  if (f.after_vanished_ms !== null) t += ", " + f.after_vanished_ms + " ms after the old primary's key vanished";
  for (const s of f.streams) {
    t += "; " + s.seen_by + " resumed the stream at offset " + s.offset + " at " + clock(s.resumed_unix_s);
    if (s.lost_unix_s !== null) t += " (old primary lost at " + clock(s.lost_unix_s) + (s.lost_cause ? ": " + s.lost_cause : "") + ")";
    if (s.first_item_unix_s !== null) t += ", first new item at " + clock(s.first_item_unix_s);
  }
  return t;
}

function onCluster(c) {
  $("elapsed").textContent = c.elapsed_s.toFixed(1) + " s" + (c.stopping ? " · stopping" : "");
  const hosts = $("hosts");
  if (c.hosts.length) hosts.replaceChildren(...c.hosts.map(hostCard));
  const ul = $("failovers");
  ul.replaceChildren();
  if (!c.failovers.length) { ul.append(el("li", "none", "muted")); return; }
  for (const f of c.failovers.slice().reverse()) { const li = el("li", failoverText(f), "failover"); li.dataset.partition = f.partition; ul.append(li); }
}

// Colour of a level 0..1 on the waterfall: dark blue, cyan, yellow, red.
function heat(t) { t = Math.min(1, Math.max(0, t)); const h = 240 - 240 * t; return "hsl(" + h + ",90%," + (12 + 45 * t) + "%)"; }

function openView() {
  const [node, port] = $("edge").value.split("\u0000"); const kind = $("kind").value; const size = Number($("size").value);
  const rate = Number($("rate").value) || 1;
  const box = el("div", undefined, "view"); box.dataset.node = node; box.dataset.port = port; box.dataset.kind = kind;
  const bar = el("div", undefined, "bar");
  const title = el("strong", node + "." + port + " · " + kind);
  const info = el("span", "", "peak"); const skipped = el("span", "", "muted");
  const close = el("button", "Close"); close.className = "close";
  bar.append(title, info, skipped, el("span", ""), close);
  const cv = el("canvas"); cv.width = 900; cv.height = kind === "waterfall" ? 300 : 220;
  box.append(bar, cv); $("views").prepend(box);
  const g = cv.getContext("2d");
  let avg = null, peak = null;
  const unit = rate === 1 ? "cycles/sample" : "Hz";
  const fmt = (x) => (rate === 1 ? x.toFixed(4) : Math.abs(x) >= 1e6 ? (x / 1e6).toFixed(4) + " M" : Math.abs(x) >= 1e3 ? (x / 1e3).toFixed(3) + " k" : x.toFixed(1) + " ") + (rate === 1 ? "" : unit);
  const ctl = stream("/api/stream", { tap: { node, port, view: kind, size, rate: 25 } }, (name, fr) => {
    if (name !== "frame") return;
    skipped.textContent = "item " + fr.first + " · skipped " + fr.skipped + (fr.dropped ? " · " + fr.dropped + " frames lost (slow connection)" : "");
    const W = cv.width, H = cv.height;
    if (fr.kind === "spectrum") {
      const b = fr.bins; const n = b.length;
      if (!avg || avg.length !== n) { avg = b.slice(); peak = b.slice(); }
      for (let i = 0; i < n; i++) { avg[i] = 0.8 * avg[i] + 0.2 * b[i]; peak[i] = Math.max(peak[i] - 0.05, b[i]); }
      // Real edges: show 0..fs/2 only (the rest mirrors it).
      const lo = fr.complex ? 0 : n / 2; const m = n - lo;
      let k = lo; for (let i = lo; i < n; i++) if (avg[i] > avg[k]) k = i;
      const freq = (k - n / 2) / n * rate;
      info.textContent = "peak " + fmt(freq) + " at " + avg[k].toFixed(1) + " dB";
      info.dataset.frequency = freq; info.dataset.unit = unit;
      const top = 10, bottom = -120; const y = (v) => 16 + (H - 32) * (top - v) / (top - bottom);
      const fx = (i) => 44 + (W - 54) * (i - lo) / m;
      if (kind === "waterfall") {
        const img = g.getImageData(44, 17, W - 54, H - 34); g.putImageData(img, 44, 18);
        for (let i = lo; i < n; i++) { g.fillStyle = heat((avg[i] - bottom) / (top - bottom) * 1.2 - 0.2); g.fillRect(fx(i), 17, Math.ceil((W - 54) / m) + 1, 1); }
      } else {
        g.fillStyle = "#0b0d10"; g.fillRect(0, 0, W, H);
        g.strokeStyle = "#262b33"; g.fillStyle = "#7d8896"; g.font = "11px system-ui";
        for (let v = top; v >= bottom; v -= 20) { g.beginPath(); g.moveTo(44, y(v)); g.lineTo(W - 10, y(v)); g.stroke(); g.fillText(v + " dB", 2, y(v) + 4); }
        const trace = (arr, colour) => { g.strokeStyle = colour; g.beginPath(); for (let i = lo; i < n; i++) { const X = fx(i), Y = y(arr[i]); i === lo ? g.moveTo(X, Y) : g.lineTo(X, Y); } g.stroke(); };
        trace(peak, "#e57373"); trace(avg, "#ffd54f");
      }
      g.fillStyle = "#0b0d10"; g.fillRect(0, H - 16, W, 16); g.fillStyle = "#7d8896"; g.font = "11px system-ui";
      for (let t = 0; t <= 4; t++) { const i = lo + t * m / 4; g.fillText(fmt((i - n / 2) / n * rate), Math.min(fx(i), W - 70), H - 4); }
    } else if (fr.kind === "scope") {
      g.fillStyle = "#0b0d10"; g.fillRect(0, 0, W, H);
      let mx = 1e-12; for (const v of fr.re) mx = Math.max(mx, Math.abs(v)); if (fr.im) for (const v of fr.im) mx = Math.max(mx, Math.abs(v));
      const plot = (arr, colour) => { g.strokeStyle = colour; g.beginPath(); arr.forEach((v, i) => { const X = W * i / arr.length, Y = H / 2 - (H / 2 - 6) * v / mx; i ? g.lineTo(X, Y) : g.moveTo(X, Y); }); g.stroke(); };
      plot(fr.re, "#4fc3f7"); if (fr.im) plot(fr.im, "#ffb74d");
      info.textContent = "±" + mx.toPrecision(3);
    } else if (fr.kind === "constellation") {
      g.fillStyle = "rgba(11,13,16,0.35)"; g.fillRect(0, 0, W, H);
      let mx = 1e-12; for (let i = 0; i < fr.re.length; i++) mx = Math.max(mx, Math.abs(fr.re[i]), Math.abs(fr.im[i]));
      const s = (H / 2 - 8) / mx; g.fillStyle = "#80deea";
      for (let i = 0; i < fr.re.length; i++) g.fillRect(W / 2 + fr.re[i] * s, H / 2 - fr.im[i] * s, 2, 2);
      info.textContent = "±" + mx.toPrecision(3);
    } else if (fr.kind === "level") {
      g.fillStyle = "#0b0d10"; g.fillRect(0, 0, W, H);
      const x = (db) => W * (Math.max(-90, Math.min(0, db)) + 90) / 90;
      g.fillStyle = "#4caf50"; g.fillRect(0, H / 3, x(fr.rms_dbfs), H / 3);
      g.fillStyle = "#ffd54f"; g.fillRect(x(fr.peak_dbfs) - 2, H / 4, 4, H / 2);
      info.textContent = "RMS " + fr.rms_dbfs.toFixed(1) + " dBFS · peak " + fr.peak_dbfs.toFixed(1) + " dBFS";
    }
  });
  close.addEventListener("click", () => { ctl.abort(); box.remove(); });
}

$("open").addEventListener("click", openView);
$("stop").addEventListener("click", async () => { try { await post("/api/stop", {}); } catch (e) { showError(e.message); } });
loadGraph().then(() => { stream("/api/stream", { stats: true }, (name, s) => { if (name === "stats") onStats(s); else if (name === "cluster") onCluster(s); }); }).catch((e) => showError(String(e)));
if (!token) showError("no token: open the address printed at start (it ends in #token=…)");
