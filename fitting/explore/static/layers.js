// The Layers tab (issue 71, the clustering-head sandbox): every layer of the d = 2 one-block transformer (sparse
// modular addition) at one step, for a recorded run (GET /api/runs/{id}/layers/meta once, then
// /api/runs/{id}/layers?step=N, a binary frame a step) or trained live on the server (the Live tab's protocol:
// /api/live?kind=network&model=sparse-modular, fitting/training/live_layers.py). Uses app.js's $, api, postJSON,
// showError, clearError, controlSender, loadRunList and plots.js's decodeFrame, drawAxes, lineChart, hue.
"use strict";

// classes in the same colours in every panel (token i is class i: the output is tied to the token embedding), and as
// fitting.sandbox's figures colour them (matplotlib's tab10 up to 10 classes)
const LAYER_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
const layerColour = (c, p) => (p <= LAYER_COLOURS.length ? LAYER_COLOURS[c] || "#718096" : hue(c, p));
const LAYER_CURVES = { train_loss: ["train", "#1a202c"], val_loss: ["validation", "#805ad5"], batch_loss: ["minibatch", "#a0aec0"],
                       train_acc: ["train", "#1a202c"], val_acc: ["validation", "#805ad5"] };
const LAYER_SIZE = 262;  // a panel's canvas, square
const LAYER_PANELS = [
  ["token", "token embeddings E"], ["position", "position embeddings P"], ["inputs", "E + P (token i at position t)"],
  ["normed", "normalised E + P (RMSNorm)"], ["values", "value map V(x̂) and query q"], ["attention", "attention weights"],
  ["sequence", "sequence embeddings, regions"], ["normed_sequence", "normed sequence embeddings"], ["mlp", "MLP output"],
  ["residual", "residual stream, regions"], ["simplex", "output probabilities"],
];
const LAYER_CHARTS = ["loss", "accuracy", "grads"];
const LAYER_BUTTONS = { play: "layers-play", pause: "layers-pause", step: "layers-step-once", reset: "layers-reset" };
const LAYER_CONTROL_ORDER = ["p", "seq_len", "k", "seed", "lr", "batch_size", "init_scale", "curriculum", "steps_per_frame"];
const LAYER_CONTROL_LABELS = { p: "p", seq_len: "seq_len T", k: "k summed", seed: "seed", lr: "learning rate", batch_size: "batch size",
                               init_scale: "init scale", curriculum: "curriculum", steps_per_frame: "steps/frame" };

const lay = { opened: false, source: null, run: null, runs: [], shown: null, latencies: [], scrub: { busy: false, next: null }, limits: {},
              live: { session: null, ws: null, meta: null, values: {}, controls: null, queued: null, frameTimes: [], frames: 0,
                      series: null, lastRestarts: -1, frameMs: undefined } };
const layersTab = () => $("tab-layers");

// ---- opening the tab ---------------------------------------------------------------------------------
async function openLayersTab() {
  if (!lay.opened) {
    lay.opened = true;
    buildLayerBoard();
    connectLayersLive();
  }
  await loadLayersRuns();
}

function buildLayerBoard() {
  const panels = $("layers-panels");
  for (const [name, title] of LAYER_PANELS) {
    const c = document.createElement("canvas"); c.id = "layers-canvas-" + name; c.width = LAYER_SIZE; c.height = LAYER_SIZE;
    c.dataset.panel = name; c.setAttribute("aria-label", title); panels.appendChild(c);
  }
  const charts = $("layers-charts");
  for (const name of LAYER_CHARTS) {
    const c = document.createElement("canvas"); c.id = "layers-chart-" + name; c.width = 352; c.height = 220;
    c.dataset.panel = name; charts.appendChild(c);
  }
  $("layers-run").addEventListener("change", ev => openLayersRun(Number(ev.target.value)).catch(() => {}));
  $("layers-step").addEventListener("input", ev => showLayersStep(Number(ev.target.value)));
  $("layers-prev").addEventListener("click", () => moveLayersStep(-1));
  $("layers-next").addEventListener("click", () => moveLayersStep(1));
  $("layers-file").addEventListener("change", ev => { if (ev.target.files.length) uploadLayersRun(ev.target.files[0]); });
  for (const [name, id] of Object.entries(LAYER_BUTTONS)) $(id).addEventListener("click", () => layersAction(name));
}

// ---- recorded runs -----------------------------------------------------------------------------------
async function loadLayersRuns(select) {
  const body = await (await api("/api/runs")).json();
  lay.runs = body.runs;
  const list = $("layers-run"), was = list.value; list.innerHTML = "";
  for (const run of body.runs) {
    const o = document.createElement("option"); o.value = run.id;
    o.textContent = `${run.name} (p = ${run.p}${run.layers ? `, ${run.snapshots} recorded steps` : ", no layer states"})`;
    list.appendChild(o);
  }
  const withLayers = body.runs.filter(r => r.layers);
  if (select !== undefined) list.value = select;
  else if (lay.run && body.runs.some(r => r.id === lay.run.id)) list.value = lay.run.id;
  else if (withLayers.length) list.value = withLayers[0].id;
  else if (was !== "") list.value = was;
  if (!withLayers.length && select === undefined) {
    $("layers-run-info").textContent = "no run with layer states is open: open a file recorded with layers=True " +
      "(embdyn train sparse-modular --layers), or train one live below";
  }
  if (body.runs.length && (select !== undefined || (!lay.run && withLayers.length))) await openLayersRun(Number(list.value));
}

async function uploadLayersRun(file) {
  try {
    const body = await (await api(`/api/runs?name=${encodeURIComponent(file.name)}`, { method: "POST", body: file })).json();
    clearError();
    await loadLayersRuns(body.id);
    loadRunList().catch(() => {});  // the Run tab's list too (app.js)
  } catch (e) { /* shown */ } finally { $("layers-file").value = ""; }
}

async function openLayersRun(id) {
  const t0 = performance.now();
  let meta;
  try { meta = await (await api(`/api/runs/${id}/layers/meta`)).json(); } catch (e) {
    $("layers-run-info").textContent = e.message;  // a run without layer states: how to record them
    return;
  }
  clearError();
  const r = { id, meta };
  lay.run = r; lay.scrub.next = null;
  const nTrain = meta.probe_split.filter(s => s === "train").length;
  $("layers-run-info").textContent = `${meta.name}: ${meta.model || "a network"}, p = ${meta.p}, T = ${meta.T}` +
    (meta.k ? `, k = ${meta.k}` : "") + `; ${meta.B} probe sequences (${nTrain} training, ${meta.B - nTrain} validation); ` +
    `${meta.steps.length} recorded steps, ${meta.steps[0]}–${meta.steps[meta.steps.length - 1]}`;
  const slider = $("layers-step"); slider.min = 0; slider.max = meta.steps.length - 1; slider.value = meta.steps.length - 1;
  await showLayersStep(meta.steps.length - 1, t0);
}

function moveLayersStep(delta) {
  const slider = $("layers-step");
  const i = Math.max(0, Math.min(Number(slider.max), Number(slider.value) + delta));
  slider.value = i; showLayersStep(i);
}

// the newest step asked for waits for the one in flight (scrubbing never queues up requests)
async function showLayersStep(index, began) {
  lay.scrub.next = { index, t0: began === undefined ? performance.now() : began };
  if (lay.scrub.busy) return;
  lay.scrub.busy = true;
  try {
    while (lay.scrub.next !== null) {
      const { index, t0 } = lay.scrub.next; lay.scrub.next = null;
      const r = lay.run; if (!r) break;
      const step = r.meta.steps[index];
      const frame = decodeFrame(await (await api(`/api/runs/${r.id}/layers?step=${step}`)).arrayBuffer());
      if (lay.run !== r) continue;  // another run was opened meanwhile
      setLayersSource("recorded");
      drawRecordedLayers(r, frame, index);
      const ms = performance.now() - t0;
      lay.latencies.push(ms);
      if (lay.latencies.length > 200) lay.latencies.splice(0, lay.latencies.length - 200);  // the last 200
      layersTab().dataset.frameMs = ms.toFixed(1);
      $("layers-latency").textContent = `${ms.toFixed(0)} ms (request to panels drawn)`;
    }
  } catch (e) { /* shown by api() */ } finally { lay.scrub.busy = false; }
}

function drawRecordedLayers(r, frame, index) {
  const h = frame.header, m = r.meta;
  $("layers-step-label").textContent = `step ${h.step} (${index + 1} of ${m.steps.length} recorded)`;
  drawLayerPanels(frame.arrays, { p: m.p, k: m.k, T: m.T, labels: m.probe_labels, split: m.probe_split, smooth: false, step: h.step });
  layerReadout(h.step, h.values);
  const curve = n => (m.curves[n] ? { x: m.curves[n].x, y: m.curves[n].y } : null);
  const curves = {};
  for (const n of Object.keys(m.curves)) curves[n] = curve(n);
  drawLayerCharts(curves, h.step, `run${r.id}`);
  $("layers-source").textContent = `recorded run ${m.name}, step ${h.step}`;
}

// ---- which source the panels show ----------------------------------------------------------------------
function setLayersSource(source) {
  if (lay.source === source) return;
  if (source === "recorded" && lay.live.session && lay.live.playing) layersAction("pause");
  lay.source = source; lay.limits = {};
  for (const c of LAYER_CHARTS) { const canvas = $("layers-chart-" + c); if (canvas) canvas._cacheKey = undefined; }
  layersTab().dataset.source = source;
}

// ---- live training -------------------------------------------------------------------------------------
function connectLayersLive() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/live?kind=network&model=sparse-modular`);
  lay.live.ws = ws; ws.binaryType = "arraybuffer";
  ws.onclose = ev => {
    if (lay.live.ws !== ws) return;
    lay.live.session = null; lay.live.queued = null; showLayersQueued(null);
    $("layers-live-status").textContent = ev.reason ? `closed by the server: ${ev.reason}` : "disconnected: reload the page";
  };
  ws.onmessage = ev => {
    if (typeof ev.data === "string") {
      const msg = JSON.parse(ev.data);
      if (msg.type === "hello") {
        lay.live.session = msg.session; buildLayerControls(msg.meta.controls); layersLiveMeta(msg.meta);
        showLayerValues(msg.meta.values, true);
        layersTab().dataset.liveSession = msg.session;
        $("layers-live-status").textContent = `connected: ${msg.meta.description}`;
        runQueuedLayers();
      } else if (msg.type === "error") {
        $("layers-live-status").textContent = msg.error; lay.live.queued = null; showLayersQueued(null);
        for (const id of Object.values(LAYER_BUTTONS)) $(id).disabled = true;
        layersTab().dataset.live = "unavailable";
      }
      return;
    }
    try { onLayersLiveFrame(decodeFrame(ev.data)); } finally { ws.send(JSON.stringify({ type: "ack" })); }
  };
}

function buildLayerControls(spec) {
  if (lay.live.controls) return;
  lay.live.controls = spec;
  const box = $("layers-live-controls");
  for (const name of LAYER_CONTROL_ORDER) {
    const s = spec[name]; if (!s) continue;
    const label = document.createElement("label"); label.textContent = LAYER_CONTROL_LABELS[name] + " ";
    let input;
    if (s.kind === "choice" || (s.kind === "int" && s.high - s.low <= 4)) {
      input = document.createElement("select");
      const choices = s.kind === "choice" ? s.choices : Array.from({ length: s.high - s.low + 1 }, (_, i) => String(s.low + i));
      for (const c of choices) { const o = document.createElement("option"); o.textContent = c; input.appendChild(o); }
      input.addEventListener("change", () => sendLayerControl(name, s.kind === "choice" ? input.value : Number(input.value)));
    } else {
      input = document.createElement("input"); input.type = "text"; input.size = 6;
      input.addEventListener("change", () => {
        const text = input.value.trim();
        if (text === "") { input.value = lay.live.values[name]; return; }
        sendLayerControl(name, isFinite(Number(text)) ? Number(text) : text);
      });
    }
    input.id = "layers-ctl-" + name; input.dataset.layerControl = name; input.title = `${s.help}: ${s.accepted}`;
    label.appendChild(input); box.appendChild(label);
  }
}

function showLayerValues(values, force) {
  lay.live.values = values;
  for (const [name, value] of Object.entries(values)) {
    const box = $("layers-ctl-" + name); if (box && (force || document.activeElement !== box)) box.value = String(value);
  }
  showLayersRate();
}

const layersSender = controlSender(() => lay.live.session, (values, force) => showLayerValues(values || lay.live.values, force),
                                   meta => layersLiveMeta(meta));
const sendLayerControl = layersSender.send;

function layersLiveMeta(meta) {
  lay.live.meta = meta; resetLayersSeries();
  if (lay.source === "live") lay.limits = {};
  showLayersRate();
}

function resetLayersSeries() {
  lay.live.series = { x: [], train_loss: [], val_loss: [], batch_loss: [], train_acc: [], val_acc: [], grads: {} };
  lay.live.frameTimes = [];
}

function showLayersQueued(name) {
  const button = $("layers-play");
  button.textContent = name === "play" ? "starting…" : "play";
  button.dataset.state = name === "play" ? "starting" : "";
}

async function layersAction(name) {
  if (name !== "pause") setLayersSource("live");
  if (!lay.live.session) {
    if (name === "play" || name === "step") lay.live.queued = name;
    else if (name === "pause") lay.live.queued = null;
    showLayersQueued(lay.live.queued);
    return;
  }
  if (name === "play") lay.live.playing = true;
  else if (name !== "reset") lay.live.playing = false;
  try { await postJSON(`/api/live/${lay.live.session}/action`, { action: name }); clearError(); } catch (e) { /* shown */ }
  if (name === "reset") { resetLayersSeries(); lay.limits = {}; }
  if (name !== "play") showLayersQueued(null);
}

function runQueuedLayers() {
  const name = lay.live.queued; lay.live.queued = null;
  if (name) layersAction(name);
}

function showLayersRate(achieved) {
  const L = lay.live, meta = L.meta; if (!meta) return;
  const tab = layersTab(), spf = L.values.steps_per_frame;
  tab.dataset.rateTarget = meta.frame_rate;
  $("layers-rate-target").textContent = `${meta.frame_rate} frames/s, ${spf} training step${spf === 1 ? "" : "s"} a frame`;
  if (achieved !== undefined) {
    tab.dataset.rateAchieved = achieved === null ? "" : achieved.toFixed(2);
    $("layers-rate").textContent = achieved === null ? "– (not playing)" : `${achieved.toFixed(1)} frames/s`;
  }
}

function onLayersLiveFrame(frame) {
  const h = frame.header, L = lay.live;
  if (h.playing && $("layers-play").dataset.state === "starting") showLayersQueued(null);
  if (h.restarts !== L.lastRestarts) { L.lastRestarts = h.restarts; resetLayersSeries(); if (lay.source === "live") lay.limits = {}; }
  L.frames += 1; L.playing = h.playing;
  const now = performance.now();
  if (h.playing) L.frameTimes.push(now); else L.frameTimes = [];
  while (L.frameTimes.length && L.frameTimes[0] < now - 3000) L.frameTimes.shift();
  const n = L.frameTimes.length;
  showLayersRate(n >= 3 ? (n - 1) / ((L.frameTimes[n - 1] - L.frameTimes[0]) / 1000) : null);
  L.frameMs = L.frameMs === undefined ? h.compute_ms : 0.8 * L.frameMs + 0.2 * h.compute_ms;
  const budget = 1000 / (L.meta ? L.meta.frame_rate : 10);
  $("layers-frame-time").textContent = `${L.frameMs.toFixed(0)} ms` + (L.frameMs > budget ? `: over the ${budget.toFixed(0)} ms a frame ` +
    "has at this rate (lower steps/frame)" : "") + (h.cut ? ` · ${h.cut.done} of ${h.cut.asked} steps (cut)` : "");
  const counter = $("layers-live-step"); counter.textContent = h.step; counter.dataset.version = h.version;
  layersTab().dataset.liveStep = h.step;
  if (h.error) showError(h.error);
  const s = L.series;
  if (!s.x.length || s.x[s.x.length - 1] !== h.step) {
    s.x.push(h.step);
    for (const k of ["train_loss", "val_loss", "batch_loss", "train_acc", "val_acc"]) s[k].push(h[k] === undefined ? null : h[k]);
    for (const [g, v] of Object.entries(h.grad_norms || {})) (s.grads[g] = s.grads[g] || []).push(v);
    if (s.x.length > 3000) {
      for (const k of Object.keys(s)) if (Array.isArray(s[k])) s[k].splice(0, s[k].length - 2000);
      for (const g of Object.keys(s.grads)) s.grads[g].splice(0, s.grads[g].length - s.x.length);
    }
  }
  if (lay.source === "live") drawLiveLayers(frame);
}

function drawLiveLayers(frame) {
  const h = frame.header, meta = lay.live.meta, s = lay.live.series;
  const B = frame.arrays.sequence ? frame.arrays.sequence.shape[0] : 0;
  // a restarted run's meta is on its way: its probe classes are another run's until it comes
  if (!meta || meta.restarts !== h.restarts || meta.p !== h.p || meta.probe_labels.length !== B) return;
  drawLayerPanels(frame.arrays, { p: h.p, k: h.k, T: h.T, labels: meta.probe_labels, split: meta.probe_split, smooth: true, step: h.step });
  layerReadout(h.step, h);
  const curves = {};
  for (const k of ["train_loss", "val_loss", "batch_loss", "train_acc", "val_acc"]) curves[k] = { x: s.x, y: s[k] };
  for (const [g, v] of Object.entries(s.grads)) curves["grad_norm_" + g] = { x: s.x.slice(s.x.length - v.length), y: v };
  drawLayerCharts(curves, h.step, undefined);
  $("layers-source").textContent = `live training, step ${h.step}`;
}

// ---- the panels ------------------------------------------------------------------------------------------
function layerReadout(step, v) {
  const num = (x, d) => (x === null || x === undefined || !isFinite(x) ? "–" : Number(x).toFixed(d));
  $("layers-shown-step").textContent = step;
  $("layers-train").textContent = `${num(v.train_loss, 4)} / ${num(v.train_acc, 3)}`;
  $("layers-val").textContent = `${num(v.val_loss, 4)} / ${num(v.val_acc, 3)}`;
  $("layers-batch").textContent = num(v.batch_loss, 4);
}

function drawLayerPanels(a, info) {
  const began = performance.now();
  info.order = layerRowOrder(info);
  const draw = { token: panelToken, position: panelPosition, inputs: panelInputs, normed: panelNormed, values: panelValues,
                 attention: panelAttention, sequence: panelSequence, normed_sequence: panelNormedSequence, mlp: panelMLP,
                 residual: panelResidual, simplex: panelSimplex };
  for (const [name, title] of LAYER_PANELS) draw[name]($("layers-canvas-" + name), a, info, title);
  drawLayerLegend(info.p);
  lay.shown = { step: info.step, source: lay.source, arrays: a, drawMs: performance.now() - began };
  layersTab().dataset.step = info.step;
}

function drawLayerLegend(p) {
  const box = $("layers-legend");
  if (box.dataset.p === String(p)) return;
  box.dataset.p = p; box.innerHTML = "";
  for (let c = 0; c < p; c++) {
    const item = document.createElement("span"), swatch = document.createElement("span");
    swatch.className = "swatch"; swatch.style.background = layerColour(c, p);
    item.appendChild(swatch); item.appendChild(document.createTextNode(`class ${c} (token ${c}) `)); box.appendChild(item);
  }
  box.appendChild(document.createTextNode("· filled: training sequence, hollow: validation · shaded: the class the network " +
    "gives each point of the plane"));
}

// probe sequences by split (training first) and class: the attention map's rows
function layerRowOrder(info) {
  if (info.labels._order) return info.labels._order;
  const idx = info.labels.map((_, i) => i);
  idx.sort((i, j) => (info.split[i] === info.split[j] ? info.labels[i] - info.labels[j] || i - j : info.split[i] === "train" ? -1 : 1));
  Object.defineProperty(info.labels, "_order", { value: idx, enumerable: false });
  return idx;
}

// a panel's frame: axes over square limits, clipped to the plot box; returns {ctx, map}
function layerPanel(canvas, limits, title, xlabel, ylabel) {
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const box = { left: 60, top: 22, width: canvas.width - 68, height: canvas.height - 68 };
  const { sx, sy } = drawAxes(ctx, box, [limits[0], limits[1]], [limits[2], limits[3]], xlabel, ylabel, title);
  ctx.save(); ctx.beginPath(); ctx.rect(box.left, box.top, box.width, box.height); ctx.clip();
  return { ctx, map: { sx, sy, box } };
}

function layerMissing(canvas, title, why) {
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = "#333"; ctx.font = "bold 12px system-ui, sans-serif"; ctx.textAlign = "center"; ctx.textBaseline = "top";
  ctx.fillText(title, canvas.width / 2, 6);
  ctx.fillStyle = "#888"; ctx.font = "12px system-ui, sans-serif"; ctx.textBaseline = "middle";
  ctx.fillText(why || "not recorded for this model", canvas.width / 2, canvas.height / 2);
}

// square limits around the points of ``sets`` (flat x, y arrays) and the origin; ``smooth`` (live): grow at once,
// shrink a quarter of the way a frame
function layerLimits(name, sets, smooth) {
  const lo = [0, 0], hi = [0, 0];
  for (const pts of sets) {
    for (let i = 0; i + 1 < pts.length; i += 2) {
      const x = pts[i], y = pts[i + 1];
      if (!isFinite(x) || !isFinite(y)) continue;
      lo[0] = Math.min(lo[0], x); hi[0] = Math.max(hi[0], x); lo[1] = Math.min(lo[1], y); hi[1] = Math.max(hi[1], y);
    }
  }
  const cx = (lo[0] + hi[0]) / 2, cy = (lo[1] + hi[1]) / 2, half = Math.max(hi[0] - lo[0], hi[1] - lo[1], 1e-6) * 0.58;
  const target = [cx - half, cx + half, cy - half, cy + half], cur = lay.limits[name];
  let out = target;
  if (smooth && cur) {
    const grow = target[0] < cur[0] || target[1] > cur[1] || target[2] < cur[2] || target[3] > cur[3];
    out = grow ? target : cur.map((v, i) => v + 0.25 * (target[i] - v));
  }
  lay.limits[name] = out;
  return out;
}

function layerDot(ctx, x, y, r, colour, hollow) {
  ctx.beginPath(); ctx.arc(x, y, r, 0, 2 * Math.PI);
  if (hollow) { ctx.strokeStyle = colour; ctx.lineWidth = 1.4; ctx.stroke(); } else { ctx.fillStyle = colour; ctx.fill(); }
}

// the probe sequences' points: filled (training) first, hollow rings (validation) over them
function layerSequenceDots(ctx, map, xy, info, r) {
  for (const hollow of [false, true]) {
    for (let i = 0; i < xy.length / 2; i++) {
      if ((info.split[i] === "val") !== hollow) continue;
      const x = xy[2 * i], y = xy[2 * i + 1];
      if (isFinite(x) && isFinite(y)) layerDot(ctx, map.sx(x), map.sy(y), r, layerColour(info.labels[i], info.p), hollow);
    }
  }
}

// a region map (G x G class indices; row = one y from y0, column = one x from x0) shaded over its extent
function layerRegions(ctx, map, regions, extent, p) {
  const G = Math.round(Math.sqrt(regions.length));
  if (G < 2) return;
  const [x0, x1, y0, y1] = extent, dx = (x1 - x0) / (G - 1), dy = (y1 - y0) / (G - 1);
  const px = c => Math.round(map.sx(x0 + (c - 0.5) * dx)), py = r => Math.round(map.sy(y0 + (r - 0.5) * dy));
  ctx.save(); ctx.globalAlpha = 0.2;
  for (let r = 0; r < G; r++) {
    const top = py(r + 1), bottom = py(r);
    let c = 0;
    while (c < G) {  // runs of one class along the row
      const cls = regions[r * G + c];
      let e = c + 1; while (e < G && regions[r * G + e] === cls) e++;
      ctx.fillStyle = layerColour(cls, p); ctx.fillRect(px(c), top, px(e) - px(c), bottom - top);
      c = e;
    }
  }
  ctx.restore();
}

function layerCircle(ctx, map, radius) {
  ctx.save(); ctx.strokeStyle = "#a0aec0"; ctx.setLineDash([4, 3]); ctx.lineWidth = 1;
  ctx.beginPath(); ctx.arc(map.sx(0), map.sy(0), Math.abs(map.sx(radius) - map.sx(0)), 0, 2 * Math.PI); ctx.stroke(); ctx.restore();
}

function layerOrigin(ctx, map) {
  ctx.save(); ctx.strokeStyle = "#cbd5e0"; ctx.lineWidth = 1;
  ctx.beginPath(); ctx.moveTo(map.sx(0), map.box.top); ctx.lineTo(map.sx(0), map.box.top + map.box.height);
  ctx.moveTo(map.box.left, map.sy(0)); ctx.lineTo(map.box.left + map.box.width, map.sy(0)); ctx.stroke(); ctx.restore();
}

function layerArrow(ctx, ax, ay, bx, by, colour, width) {
  const t = Math.atan2(by - ay, bx - ax);
  ctx.strokeStyle = colour; ctx.lineWidth = width || 1.6;
  ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by);
  ctx.lineTo(bx - 7 * Math.cos(t - 0.4), by - 7 * Math.sin(t - 0.4)); ctx.moveTo(bx, by);
  ctx.lineTo(bx - 7 * Math.cos(t + 0.4), by - 7 * Math.sin(t + 0.4)); ctx.stroke();
}

function layerText(ctx, text, x, y, colour, font) {
  ctx.fillStyle = colour || "#222"; ctx.font = font || "11px system-ui, sans-serif"; ctx.fillText(text, x, y);
}

function panelToken(canvas, a, info, title) {
  const E = a.token_embedding; if (!E) { layerMissing(canvas, title); return; }
  const { ctx, map } = layerPanel(canvas, layerLimits("token", [E.data], info.smooth), title, "dimension 1", "dimension 2");
  layerOrigin(ctx, map);
  ctx.textAlign = "left"; ctx.textBaseline = "bottom";
  for (let i = 0; i < E.shape[0]; i++) {
    const x = map.sx(E.data[2 * i]), y = map.sy(E.data[2 * i + 1]);
    layerDot(ctx, x, y, 7, layerColour(i, info.p), false);
    if (info.p <= 20) layerText(ctx, `E${i}`, x + 8, y - 4, "#222", "bold 12px system-ui, sans-serif");
  }
  ctx.restore();
}

function panelPosition(canvas, a, info, title) {
  const P = a.position; if (!P) { layerMissing(canvas, title); return; }
  const T = P.shape[0], k = info.k || 0;
  const { ctx, map } = layerPanel(canvas, layerLimits("position", [P.data], info.smooth), title,
                                  k ? `dimension 1 (ringed: ${k} summed)` : "dimension 1", "dimension 2");
  layerOrigin(ctx, map);
  ctx.strokeStyle = "#cbd5e0"; ctx.lineWidth = 1; ctx.beginPath();
  for (let t = 0; t < T; t++) { const x = map.sx(P.data[2 * t]), y = map.sy(P.data[2 * t + 1]); if (t) ctx.lineTo(x, y); else ctx.moveTo(x, y); }
  ctx.stroke();
  ctx.textAlign = "left"; ctx.textBaseline = "bottom";
  for (let t = 0; t < T; t++) {
    const x = map.sx(P.data[2 * t]), y = map.sy(P.data[2 * t + 1]);
    layerDot(ctx, x, y, 4.5, `hsl(215, 25%, ${Math.round(72 - 55 * t / Math.max(1, T - 1))}%)`, false);
    if (t < k) { ctx.strokeStyle = "#1a202c"; ctx.lineWidth = 1.5; ctx.beginPath(); ctx.arc(x, y, 7.5, 0, 2 * Math.PI); ctx.stroke(); }
    layerText(ctx, String(t), x + 6, y - 3, "#4a5568", "10px system-ui, sans-serif");
  }
  ctx.restore();
}

// per (token, position) points (p, T, 2) in their token's colour, each labelled with its position t
function layerTokenPositions(ctx, map, X, info, r, labels) {
  const p = X.shape[0], T = X.shape[1];
  for (let i = 0; i < p; i++) {
    ctx.textAlign = "left"; ctx.textBaseline = "bottom";
    for (let t = 0; t < T; t++) {
      const x = X.data[(i * T + t) * 2], y = X.data[(i * T + t) * 2 + 1];
      if (!isFinite(x) || !isFinite(y)) continue;
      layerDot(ctx, map.sx(x), map.sy(y), r, layerColour(i, info.p), false);
      if (labels && T <= 16) layerText(ctx, String(t), map.sx(x) + 4, map.sy(y) - 2, "#4a5568", "9px system-ui, sans-serif");
    }
  }
}

function panelInputs(canvas, a, info, title) {
  const X = a.inputs; if (!X) { layerMissing(canvas, title); return; }
  const { ctx, map } = layerPanel(canvas, layerLimits("inputs", [X.data], info.smooth), title, "dimension 1", "dimension 2");
  layerOrigin(ctx, map);
  layerTokenPositions(ctx, map, X, info, 3.5, true);
  ctx.restore();
}

const RMS_RADIUS = Math.SQRT2;  // RMSNorm without gain puts a d = 2 vector at norm sqrt(d)

function panelNormed(canvas, a, info, title) {
  const X = a.normed_inputs; if (!X) { layerMissing(canvas, title); return; }
  const r = RMS_RADIUS, ring = [-r, -r, r, r];
  const { ctx, map } = layerPanel(canvas, layerLimits("normed", [X.data, ring], info.smooth), title, "dimension 1", "dimension 2");
  layerOrigin(ctx, map); layerCircle(ctx, map, r);
  layerTokenPositions(ctx, map, X, info, 3.5, true);
  ctx.restore();
}

function panelValues(canvas, a, info, title) {
  const V = a.values, q = a.query, W = a.value_map; if (!V) { layerMissing(canvas, title); return; }
  const sets = [V.data];
  if (a.normed_inputs) sets.push(a.normed_inputs.data);
  const { ctx, map } = layerPanel(canvas, layerLimits("values", sets, info.smooth), title, "dimension 1", "dimension 2");
  layerOrigin(ctx, map);
  if (a.normed_inputs) {  // the inputs the value map and the query read, faint
    const X = a.normed_inputs.data;
    for (let i = 0; i < X.length / 2; i++) if (isFinite(X[2 * i])) layerDot(ctx, map.sx(X[2 * i]), map.sy(X[2 * i + 1]), 2.5, "#cbd5e0", true);
  }
  layerTokenPositions(ctx, map, V, info, 3.5, false);
  if (q) {  // the query's direction, drawn at a third of the view
    const n = Math.hypot(q.data[0], q.data[1]);
    if (n > 0) {
      const L = (map.box.width / 3) / n;
      const ox = map.sx(0), oy = map.sy(0);
      layerArrow(ctx, ox, oy, ox + L * q.data[0], oy - L * q.data[1], "#1a202c", 2);
      ctx.textAlign = "left"; ctx.textBaseline = "bottom";
      layerText(ctx, "q", ox + L * q.data[0] + 4, oy - L * q.data[1] - 2, "#1a202c", "bold 12px system-ui, sans-serif");
    }
  }
  // the value map [W | b] and the query's length, in the corner of the plot with the fewest points
  const f = v => (Math.abs(v) < 0.005 ? "0" : v.toFixed(2)), lines = [];
  if (W) { const w = W.data; lines.push(`W = [${f(w[0])} ${f(w[1])}; ${f(w[3])} ${f(w[4])}]`, `b = [${f(w[2])} ${f(w[5])}]`); }
  if (q) lines.push(`|q| = ${Math.hypot(q.data[0], q.data[1]).toFixed(2)}`);
  const bw = 150, bh = 4 + 12 * lines.length, b = map.box;
  const corners = [[b.left + 2, b.top + 2], [b.left + b.width - bw - 2, b.top + 2], [b.left + 2, b.top + b.height - bh - 2],
                   [b.left + b.width - bw - 2, b.top + b.height - bh - 2]];
  const crowd = ([x, y]) => { let n = 0; for (const pts of sets) for (let i = 0; i + 1 < pts.length; i += 2) {
    const u = map.sx(pts[i]), v = map.sy(pts[i + 1]); if (u >= x && u <= x + bw && v >= y && v <= y + bh) n++; } return n; };
  const [cx, cy] = corners.reduce((best, c) => (crowd(c) < crowd(best) ? c : best));
  ctx.fillStyle = "rgba(255,255,255,0.85)"; ctx.fillRect(cx, cy, bw, bh);
  ctx.textAlign = "left"; ctx.textBaseline = "top";
  lines.forEach((line, i) => layerText(ctx, line, cx + 3, cy + 3 + 12 * i, "#222", "10px ui-monospace, monospace"));
  ctx.restore();
}

function panelAttention(canvas, a, info, title) {
  const A = a.attention; if (!A) { layerMissing(canvas, title); return; }
  const B = A.shape[0], T = A.shape[1], k = info.k || 0, order = info.order;
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const box = { left: 60, top: 22, width: canvas.width - 68, height: canvas.height - 68 };
  let top = 0; for (let i = 0; i < A.data.length; i++) if (A.data[i] > top) top = A.data[i];
  const cw = box.width / T, rh = box.height / B;
  ctx.fillStyle = "#1a365d";
  for (let r = 0; r < B; r++) {
    const row = order[r], y0 = Math.floor(box.top + r * rh), y1 = Math.floor(box.top + (r + 1) * rh);
    for (let t = 0; t < T; t++) {
      const w = A.data[row * T + t]; if (!(w > 0)) continue;
      ctx.globalAlpha = Math.min(1, w / top);
      ctx.fillRect(Math.floor(box.left + t * cw), y0, Math.floor(box.left + (t + 1) * cw) - Math.floor(box.left + t * cw), Math.max(1, y1 - y0));
    }
  }
  ctx.globalAlpha = 1;
  let firstVal = -1;
  for (let r = 0; r < B; r++) {  // each row's class, in a strip left of the map
    const row = order[r];
    if (firstVal < 0 && info.split[row] === "val") firstVal = r;
    ctx.fillStyle = layerColour(info.labels[row], info.p);
    ctx.fillRect(box.left - 7, Math.floor(box.top + r * rh), 5, Math.max(1, Math.ceil(rh)));
  }
  ctx.strokeStyle = "#999"; ctx.lineWidth = 1; ctx.strokeRect(box.left, box.top, box.width, box.height);
  ctx.fillStyle = "#333"; ctx.font = "10px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
  if (firstVal > 0) {
    const y = box.top + firstVal * rh;
    ctx.strokeStyle = "#1a202c"; ctx.beginPath(); ctx.moveTo(box.left - 9, y); ctx.lineTo(box.left + box.width, y); ctx.stroke();
    ctx.fillText("train", box.left - 10, box.top + firstVal * rh / 2);
    ctx.fillText("val", box.left - 10, (y + box.top + box.height) / 2);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  const every = Math.max(1, Math.ceil(T / 12));
  for (let t = 0; t < T; t += every) ctx.fillText(String(t), box.left + (t + 0.5) * cw, box.top + box.height + 7);
  if (k) { ctx.fillStyle = "#1a202c"; ctx.fillRect(box.left, box.top + box.height + 2, k * cw, 3); }
  ctx.font = "12px system-ui, sans-serif"; ctx.textBaseline = "bottom";
  ctx.fillText(k ? `position t (bar: the ${k} summed)` : "position t", box.left + box.width / 2, box.top + box.height + 36);
  ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillText(`${title} (max ${top.toFixed(2)})`, box.left + box.width / 2, box.top - 4);
  ctx.save(); ctx.translate(box.left - 46, box.top + box.height / 2); ctx.rotate(-Math.PI / 2);
  ctx.font = "12px system-ui, sans-serif"; ctx.fillText("probe sequences by class", 0, 0); ctx.restore();
}

function panelPlane(canvas, a, info, title, name, plane, circle, xlabel) {
  const S = a[name]; if (!S) { layerMissing(canvas, title); return null; }
  const regions = plane ? a["regions_" + plane] : null, extent = plane ? a["extent_" + plane] : null;
  let limits;
  if (regions && extent) { limits = Array.from(extent.data); lay.limits[name] = limits; }
  else limits = layerLimits(name, circle ? [S.data, [-circle, -circle, circle, circle]] : [S.data], info.smooth);
  const { ctx, map } = layerPanel(canvas, limits, title, xlabel || "dimension 1", "dimension 2");
  if (regions && extent) layerRegions(ctx, map, regions.data, extent.data, info.p);
  layerOrigin(ctx, map);
  if (circle) layerCircle(ctx, map, circle);
  layerSequenceDots(ctx, map, S.data, info, 3);
  return { ctx, map };
}

function panelSequence(canvas, a, info, title) {
  const out = panelPlane(canvas, a, info, title, "sequence", "sequence", 0); if (out) out.ctx.restore();
}

function panelNormedSequence(canvas, a, info, title) {
  const out = panelPlane(canvas, a, info, title, "normed_sequence", null, RMS_RADIUS); if (out) out.ctx.restore();
}

function panelMLP(canvas, a, info, title) {
  const out = panelPlane(canvas, a, info, title, "mlp", null, 0); if (out) out.ctx.restore();
}

function panelResidual(canvas, a, info, title) {
  const out = panelPlane(canvas, a, info, title, "residual", "residual", 0, a.token_embedding ? "dimension 1 (arrows: E, tied)" : "");
  if (!out) return;
  const { ctx, map } = out, E = a.token_embedding;
  if (E) {  // the logits read the residual stream along each token's embedding (tied output)
    ctx.textAlign = "left"; ctx.textBaseline = "bottom";
    for (let i = 0; i < E.shape[0]; i++) {
      const bx = map.sx(E.data[2 * i]), by = map.sy(E.data[2 * i + 1]);
      layerArrow(ctx, map.sx(0), map.sy(0), bx, by, layerColour(i, info.p), 2);
      if (info.p <= 20) layerText(ctx, `E${i}`, bx + 4, by - 3, layerColour(i, info.p), "bold 11px system-ui, sans-serif");
    }
  }
  ctx.restore();
}

// softmax of each row of the logits (B, p)
function layerProbabilities(L) {
  const B = L.shape[0], p = L.shape[1], out = new Float64Array(B * p);
  for (let b = 0; b < B; b++) {
    let top = -Infinity; for (let c = 0; c < p; c++) top = Math.max(top, L.data[b * p + c]);
    let sum = 0; for (let c = 0; c < p; c++) { const e = Math.exp(L.data[b * p + c] - top); out[b * p + c] = e; sum += e; }
    for (let c = 0; c < p; c++) out[b * p + c] /= sum;
  }
  return out;
}

const layerJitter = i => ((i * 0.6180339887) % 1);

function panelSimplex(canvas, a, info, title) {
  const L = a.logits; if (!L) { layerMissing(canvas, title); return; }
  const B = L.shape[0], p = L.shape[1], P = layerProbabilities(L);
  const ctx = canvas.getContext("2d");
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const W = canvas.width, H = canvas.height, left = 34, right = W - 34;
  ctx.fillStyle = "#333"; ctx.textAlign = "center"; ctx.textBaseline = "bottom"; ctx.font = "bold 12px system-ui, sans-serif";
  if (p === 3) {  // the triangle: class 0 bottom left, class 1 bottom right, class 2 top
    ctx.fillText(`${title} (simplex)`, W / 2, 18);
    const v = [[left, H - 46], [right, H - 46], [W / 2, H - 46 - (right - left) * Math.sqrt(3) / 2]];
    const centre = [(v[0][0] + v[1][0] + v[2][0]) / 3, (v[0][1] + v[1][1] + v[2][1]) / 3];
    ctx.strokeStyle = "#999"; ctx.lineWidth = 1; ctx.beginPath(); ctx.moveTo(...v[0]); ctx.lineTo(...v[1]); ctx.lineTo(...v[2]); ctx.closePath(); ctx.stroke();
    ctx.setLineDash([3, 3]); ctx.strokeStyle = "#cbd5e0"; ctx.beginPath();  // where the arg max changes
    for (const [i, j] of [[0, 1], [1, 2], [2, 0]]) { ctx.moveTo(...centre); ctx.lineTo((v[i][0] + v[j][0]) / 2, (v[i][1] + v[j][1]) / 2); }
    ctx.stroke(); ctx.setLineDash([]);
    const at = b => [0, 1].map(d => P[b * 3] * v[0][d] + P[b * 3 + 1] * v[1][d] + P[b * 3 + 2] * v[2][d]);
    for (const hollow of [false, true]) for (let b = 0; b < B; b++) {
      if ((info.split[b] === "val") !== hollow) continue;
      const [x, y] = at(b); layerDot(ctx, x, y, 3, layerColour(info.labels[b], 3), hollow);
    }
    ctx.font = "bold 12px system-ui, sans-serif";
    ctx.textBaseline = "top"; ctx.fillStyle = layerColour(0, 3); ctx.fillText("class 0", v[0][0] + 4, v[0][1] + 6);
    ctx.fillStyle = layerColour(1, 3); ctx.fillText("class 1", v[1][0] - 4, v[1][1] + 6);
    ctx.textBaseline = "bottom"; ctx.fillStyle = layerColour(2, 3); ctx.fillText("class 2", v[2][0], v[2][1] - 3);
    ctx.fillStyle = "#4a5568"; ctx.font = "11px system-ui, sans-serif"; ctx.textBaseline = "top";
    ctx.fillText("each sequence at its probabilities", W / 2, H - 22);
    return;
  }
  // p = 2: the segment of P(class 1); p > 3: the probability of each sequence's own class
  const two = p === 2;
  ctx.fillText(two ? `${title} (segment)` : `${title} of each sequence's class`, W / 2, 18);
  const mid = H / 2 + 4, sx = v => left + v * (right - left);
  ctx.strokeStyle = "#4a5568"; ctx.lineWidth = 1.5; ctx.beginPath(); ctx.moveTo(left, mid); ctx.lineTo(right, mid); ctx.stroke();
  ctx.setLineDash([3, 3]); ctx.strokeStyle = "#a0aec0"; ctx.beginPath(); ctx.moveTo(sx(0.5), 34); ctx.lineTo(sx(0.5), H - 40); ctx.stroke(); ctx.setLineDash([]);
  for (const hollow of [false, true]) for (let b = 0; b < B; b++) {
    const isVal = info.split[b] === "val"; if (isVal !== hollow) continue;
    const value = two ? P[b * 2 + 1] : P[b * p + info.labels[b]];
    const y = isVal ? mid + 10 + 70 * layerJitter(b) : mid - 10 - 70 * layerJitter(b);
    layerDot(ctx, sx(value), y, 3, layerColour(info.labels[b], p), hollow);
  }
  ctx.font = "11px system-ui, sans-serif"; ctx.fillStyle = "#4a5568"; ctx.textBaseline = "middle"; ctx.textAlign = "left";
  ctx.fillText("train", 2, mid - 40); ctx.fillText("val", 2, mid + 40);
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  for (const v of [0, 0.5, 1]) ctx.fillText(String(v), sx(v), H - 38);
  ctx.font = "12px system-ui, sans-serif"; ctx.fillStyle = "#333";
  ctx.fillText(two ? "P(class 1)" : "probability of the sequence's class", W / 2, H - 22);
  if (two) {
    ctx.font = "bold 12px system-ui, sans-serif"; ctx.textBaseline = "top";
    ctx.fillStyle = layerColour(0, 2); ctx.textAlign = "left"; ctx.fillText("class 0", left - 4, 24);
    ctx.fillStyle = layerColour(1, 2); ctx.textAlign = "right"; ctx.fillText("class 1", right + 4, 24);
  }
}

// loss, accuracy and gradient norms over the steps, a cursor at the step shown; ``key``: a recorded run's charts are
// drawn once and kept (lineChart's cacheKey), scrubbing moves the cursor only
function drawLayerCharts(curves, step, key) {
  const log = v => (v !== null && v > 0 ? Math.log10(v) : null);
  const series = (names, map) => names.filter(n => curves[n] && curves[n].x.length).map(n => ({ x: curves[n].x, y: map ? curves[n].y.map(map) : curves[n].y,
    color: (LAYER_CURVES[n] || [n, "#718096"])[1], width: n === "batch_loss" ? 1 : 1.6 }));
  const legend = names => names.filter(n => curves[n] && curves[n].x.length).map(n => ({ label: LAYER_CURVES[n][0], color: LAYER_CURVES[n][1] }));
  const loss = ["batch_loss", "train_loss", "val_loss"], acc = ["train_acc", "val_acc"];
  const grads = Object.keys(curves).filter(n => n.startsWith("grad_norm_")).sort();
  const opts = (title, ylabel, extra) => Object.assign({ xlabel: "step", ylabel, title, vline: step }, extra);
  lineChart($("layers-chart-loss"), series(loss, log), opts("loss (cross-entropy)", "loss (log scale)",
    { ylog: true, legend: legend(loss), cacheKey: key && key + ":loss" }));
  lineChart($("layers-chart-accuracy"), series(acc), opts("accuracy", "accuracy", { ylim: [0, 1.02], legend: legend(acc), cacheKey: key && key + ":acc" }));
  lineChart($("layers-chart-grads"), grads.map((n, i) => ({ x: curves[n].x, y: curves[n].y.map(log), color: hue(i, grads.length), width: 1.2 })),
    opts("gradient norm by parameter group", "norm (log scale)", { ylog: true, cacheKey: key && key + ":grads",
      legend: grads.map((n, i) => ({ label: n.slice("grad_norm_".length), color: hue(i, grads.length) })) }));
}
