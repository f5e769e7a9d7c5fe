// The explorer page: Live, Run and Phase tabs talking to fitting/explore/server.py.
"use strict";

const $ = id => document.getElementById(id);
const state = { session: null, meta: null, values: {}, controls: {}, presets: {}, frames: 0, frameTimes: [],
                energy: { x: [], y: [] }, metrics: { x: [], c: [], a: [] }, lastRestarts: -1, run: null, phase: null };

function showError(message) { const box = $("error"); box.textContent = message; box.hidden = false; }
function clearError() { const box = $("error"); box.textContent = ""; box.hidden = true; }

async function api(path, options) {
  const response = await fetch(path, options);
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try { const body = await response.json(); if (body.error) message = body.error; } catch (e) { /* not JSON */ }
    showError(message);
    const error = new Error(message); error.status = response.status; throw error;
  }
  return response;
}

function postJSON(path, body) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
}

// ---- tabs -------------------------------------------------------------------------------------------
function showTab(name) {
  for (const page of document.querySelectorAll(".tab-page")) page.hidden = page.id !== "tab-" + name;
  for (const button of document.querySelectorAll("nav button.tab")) button.classList.toggle("active", button.dataset.tab === name);
  document.body.dataset.tab = name;
  if (name === "run" && state.run === null && $("run-select").options.length) safeOpenRun(Number($("run-select").value));
  if (name === "network" && typeof openNetworkTab === "function") openNetworkTab();  // network.js
  if (name === "layers" && typeof openLayersTab === "function") openLayersTab().catch(() => { /* shown */ });  // layers.js
}

// ---- live -------------------------------------------------------------------------------------------
const SLIDERS = { lam: [0, 10], wd: [0, 3], k_a: [0, 20], sig_a: [0.05, 6], k_r: [0, 10], sig_r: [0.05, 6],
                  sig_t: [0.05, 2], eps: [0.01, 3], bias_scale: [0.05, 5] };
const liveView = () => state.liveView || (state.liveView = new EmbeddingView($("live-canvas"), ["x1", "x2"]));

function buildControls() {
  const sliders = $("sliders");
  for (const [name, [lo, hi]] of Object.entries(SLIDERS)) {
    const spec = state.controls[name];
    const row = document.createElement("div"); row.className = "slider"; row.title = `${spec.help}: ${spec.accepted}`;
    row.innerHTML = `<span>${name}</span><input type="range" id="slider-${name}" min="${lo}" max="${hi}" step="${(hi - lo) / 200}">` +
                    `<input type="text" id="ctl-${name}" data-control="${name}">`;
    sliders.appendChild(row);
    $("slider-" + name).addEventListener("input", ev => sendControl(name, parseFloat(ev.target.value)));
  }
  for (const name of ["preset", "wd_target"]) {
    const select = $("ctl-" + name);
    for (const choice of state.controls[name].choices) { const o = document.createElement("option"); o.textContent = choice; select.appendChild(o); }
  }
  for (const input of document.querySelectorAll("#live-controls [data-control]")) {
    const name = input.dataset.control;
    if (input.tagName === "SELECT") input.addEventListener("change", () => sendControl(name, input.value));
    else {
      input.title = `${state.controls[name].help}: ${state.controls[name].accepted}`;
      input.addEventListener("change", () => {
        const text = input.value.trim();
        if (text === "") { input.value = state.values[name]; return; }  // an emptied box: no change
        sendControl(name, text !== "" && isFinite(Number(text)) ? Number(text) : text);
      });
    }
  }
}

function showValues(values, force) {
  state.values = values;
  for (const [name, value] of Object.entries(values)) {
    const box = $("ctl-" + name); if (box && (force || document.activeElement !== box)) box.value = value;
    const slider = $("slider-" + name);
    if (slider && document.activeElement !== slider) {
      // a value outside the slider's usual span widens it (the box takes the whole accepted range)
      if (value > Number(slider.max)) slider.max = value;
      if (value < Number(slider.min)) slider.min = value;
      slider.value = value;
    }
  }
  const preset = state.presets[values.preset];
  $("preset-description").textContent = preset ? preset.description : "";
  const classifier = values.wd_target === "classifier";  // the bias scale acts only on the classifier's decay
  for (const id of ["slider-bias_scale", "ctl-bias_scale"]) { const el = $(id); if (el) el.disabled = !classifier; }
}

// one request at a time; the newest change waits for the one in flight. A sender per tab: ``session()``
// its live session, ``shown(values, force)`` puts values in its boxes, ``restarted(meta)`` a new run.
function controlSender(session, shown, restarted) {
  const pending = { busy: false, changes: {} };
  async function flush() {
    if (pending.busy || !session() || Object.keys(pending.changes).length === 0) return;
    const changes = pending.changes; pending.changes = {}; pending.busy = true;
    try {
      const body = await (await postJSON(`/api/live/${session()}/controls`, changes)).json();
      clearError(); shown(body.values);
      if (body.meta) restarted(body.meta);
    } catch (e) {
      shown(null, true);  // the server kept its last good values
    } finally { pending.busy = false; flush(); }
  }
  return { pending, flush, send(name, value) { pending.changes[name] = value; flush(); } };
}
const liveSender = controlSender(() => state.session, (values, force) => showValues(values || state.values, force),
                                 meta => resetLive(meta));
const pending = liveSender.pending;
const sendControl = liveSender.send, flushControls = liveSender.flush;

async function action(name) {
  if (!state.session) return;
  try { await postJSON(`/api/live/${state.session}/action`, { action: name }); clearError(); } catch (e) { /* shown */ }
  if (name === "reset") resetSeries();
}

function resetSeries() { state.energy = { x: [], y: [] }; state.metrics = { x: [], c: [], a: [] }; }
function resetLive(meta) { state.meta = meta; state.liveView = null; resetSeries(); }

function onLiveFrame(frame) {
  const h = frame.header, live = $("live-step");
  if (h.restarts !== state.lastRestarts) { state.lastRestarts = h.restarts; resetSeries(); state.liveView = null; }
  state.frames += 1;
  const now = performance.now(); state.frameTimes.push(now);
  while (state.frameTimes.length && state.frameTimes[0] < now - 1000) state.frameTimes.shift();
  live.textContent = h.step; live.dataset.version = h.version;
  $("live-time").textContent = h.time.toFixed(2);
  $("live-structure").textContent = h.structure;
  $("live-circularity").textContent = h.circularity === null ? "–" : `${h.circularity.toFixed(3)} (k = ${h.frequency})`;
  $("live-accuracy").textContent = h.accuracy === null ? "–" : h.accuracy.toFixed(3);
  $("live-energy").textContent = h.energy === null ? "–" : Number(h.energy.toPrecision(6)).toString();
  $("live-explained").textContent = h.d > 2 ? `PCA of d = ${h.d}: ${(100 * h.explained).toFixed(1)} % of the variance` : "the plane itself (d = 2)";
  $("live-fps").textContent = state.frameTimes.length;
  $("live-frames").textContent = state.frames;
  $("live-cut").textContent = h.cut ? `${h.cut.done} of ${h.cut.asked} (cut at the frame's time budget)` : "as set";
  if (h.error) showError(h.error);
  state.computeMs = 0.9 * (state.computeMs || h.compute_ms) + 0.1 * h.compute_ms;  // the server's share
  const e = state.energy, m = state.metrics;
  if (!e.x.length || e.x[e.x.length - 1] !== h.step) {
    e.x.push(h.step); e.y.push(h.energy); m.x.push(h.step); m.c.push(h.circularity); m.a.push(h.accuracy);
    if (e.x.length > 3000) { for (const arr of [e.x, e.y, m.x, m.c, m.a]) arr.splice(0, arr.length - 2000); }
  }
  const showPairs = $("show-pairs").checked && state.meta;
  const view = liveView(); view.axisNames = h.d > 2 ? ["principal component 1", "principal component 2"] : ["x1", "x2"];
  view.draw(frame.arrays.positions.data, { labels: $("show-labels").checked, p: h.p,
    pairs: showPairs ? frame.arrays.pair_sums.data : null, pairLabels: state.meta ? state.meta.labels : null,
    title: `${h.structure} · step ${h.step}` });
  lineChart($("energy-plot"), [{ x: e.x, y: e.y, color: "#243447" }], { xlabel: "step", ylabel: "energy", title: "energy" });
  lineChart($("live-metrics-plot"), [{ x: m.x, y: m.c, color: "#c05621" }, { x: m.x, y: m.a, color: "#2b6cb0" }],
    { xlabel: "step", ylabel: "value", ylim: [0, 1.02], title: "structure",
      legend: [{ label: "circularity", color: "#c05621" }, { label: "accuracy", color: "#2b6cb0" }] });
}

function connectLive() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/live`);
  ws.binaryType = "arraybuffer";
  ws.onopen = () => { $("connection").textContent = "connected"; };
  ws.onclose = ev => {
    $("connection").textContent = "disconnected: reload the page"; state.session = null;
    // the server says why (the session cap, a refused host or origin); otherwise it stopped
    showError(ev.reason ? `the explorer's server closed the live connection: ${ev.reason}` :
      "the connection to the explorer's server closed (stopped, or too many pages open): reload the page");
  };
  ws.onmessage = ev => {
    if (typeof ev.data === "string") {
      const msg = JSON.parse(ev.data);
      if (msg.type === "hello") { state.session = msg.session; resetLive(msg.meta); showValues(msg.meta.values); document.body.dataset.session = msg.session; }
      return;
    }
    const began = performance.now();
    try { onLiveFrame(decodeFrame(ev.data)); } finally {
      ws.send(JSON.stringify({ type: "ack" }));
      state.drawMs = 0.9 * (state.drawMs || 0) + 0.1 * (performance.now() - began);  // the page's share of a frame
    }
  };
}

// ---- run --------------------------------------------------------------------------------------------
const runView = () => state.runView || (state.runView = new EmbeddingView($("run-canvas"), ["x1", "x2"]));

async function loadRunList(select) {
  const body = await (await api("/api/runs")).json();
  const list = $("run-select"); list.innerHTML = "";
  for (const run of body.runs) {
    const o = document.createElement("option"); o.value = run.id;
    o.textContent = `${run.name} (p = ${run.p}, d = ${run.d}, ${run.snapshots} snapshots)`; list.appendChild(o);
  }
  if (select !== undefined) list.value = select;
  // a run opens when the Run tab is shown: its metrics are computed in the background and would
  // otherwise take CPU from the Live tab
  if (body.runs.length && (select !== undefined || (state.run === null && document.body.dataset.tab === "run")))
    await openRun(Number(list.value));
}

const pct = v => `${(100 * v).toFixed(1)} %`;

async function openRun(id) {
  const t0 = performance.now();
  const frame = decodeFrame(await (await api(`/api/runs/${id}`)).arrayBuffer());
  const h = frame.header;
  const steps = frame.arrays.signal_steps.data, K = frame.arrays.signals.shape[1];
  const curves = {};  // the network's own curves (fitting.network_curves): name -> {x, y}
  for (const name of h.curves || []) curves[name] = { x: Array.from(frame.arrays["curve_steps:" + name].data), y: Array.from(frame.arrays["curve:" + name].data) };
  state.run = { id, header: h, steps, signals: frame.arrays.signals.data, K, fit: null, metrics: null, step: h.last_step,
                plane: h.default_plane, curves, stages: null };
  state.runView = null;
  const slider = $("run-step"); slider.min = h.first_step; slider.max = h.last_step; slider.value = h.last_step;
  $("fit-start").value = h.first_step; $("fit-stop").value = Math.round((h.first_step + h.last_step) / 2);
  $("fit-result").textContent = "";
  $("run-info").textContent = `${h.name}: p = ${h.p}, d = ${h.d}, ${h.snapshots} snapshots, steps ${h.first_step}-${h.last_step}` +
    (h.frequency_selection ? `; fits use ${h.frequency_selection}` : "");
  const planes = $("run-plane"); planes.innerHTML = "";
  for (const p of h.planes) {
    const o = document.createElement("option"); o.value = p.id;
    o.textContent = h.d > 2 ? (p.k ? `k = ${p.k} Fourier plane (${pct(p.share)})` : `PCA plane (${pct(p.share)})`) : p.label;
    o.title = h.d > 2 ? `${p.label}: ${pct(p.share)} of the final snapshot's variance` : p.label; planes.appendChild(o);
  }
  planes.value = h.default_plane; planes.disabled = h.planes.length < 2;
  $("stages-note").textContent = "stages: computing…";
  drawSignals(); drawCurves();
  scrub.next = null;  // a scrub of the previous run in flight draws nothing (drawRunFrame checks the run)
  const first = decodeFrame(await (await api(`/api/runs/${id}/frame?step=${h.last_step}&plane=${h.default_plane}`)).arrayBuffer());
  if (state.run.id !== id) return;
  drawRunFrame(state.run, first);
  document.body.dataset.runPaint = (performance.now() - t0).toFixed(1);
  loadStages(id);
  pollMetrics(id);
}

function safeOpenRun(id) { openRun(id).catch(() => { /* shown by api() */ }); }

// ---- stages: fitting.stages(run).to_dict() from /api/runs/{id}/stages, drawn on every time axis ----------
const STAGE_COLOURS = { memorisation: "#dd6b20", "circuit formation": "#3182ce", cleanup: "#38a169", generalisation: "#805ad5" };

async function loadStages(id) {
  let body;
  try { body = await (await api(`/api/runs/${id}/stages`)).json(); } catch (e) {
    if (state.run && state.run.id === id) $("stages-note").textContent = `stages: the server could not place them (${e.message})`;
    return;
  }
  const r = state.run; if (!r || r.id !== id) return;
  r.stages = body;
  const note = $("stages-note");
  if (!body.stages) {
    note.textContent = `stages: not placed: ${body.error}`;
    document.body.dataset.stages = "none";
  } else {
    const span = (a, b) => (a === null || a === undefined ? "?" : a) + "–" + (b === null || b === undefined ? "end" : b);
    const parts = body.stages.map(s => s.found ? `${s.name} ${span(s.start, s.stop)}` : `${s.name}: not found` + (s.reason ? ` (${s.reason})` : ""));
    let text = `stages (fitting.stages, as embdyn stages): ${parts.join("; ")}.`;
    if (body.lead_time) text += ` Lead time: ${body.lead_time.steps} steps (${body.lead_time.low}–${body.lead_time.high}).`;
    note.textContent = text;
    document.body.dataset.stages = String(body.stages.filter(s => s.found).length);
  }
  drawSignals(); drawRunMetrics(); drawCurves();
}

// the found stages as bands for lineChart (the same on every time axis)
function stageBands(r) {
  if (!r.stages || !r.stages.stages) return [];
  return r.stages.stages.filter(s => s.found).map(s => ({ start: s.start, stop: s.stop, label: s.name,
                                                           color: STAGE_COLOURS[s.name] || "#718096" }));
}
const stagesKey = r => (r.stages ? (r.stages.stages ? "s" + r.stages.stages.length : "e") : "-");
const runXlim = r => [r.header.first_step, r.header.last_step];

const RULE_NAMES = { survivors: "the survivors", key: "the key frequencies", all: "all frequencies", given: "the given frequencies" };

function drawSignals() {
  const r = state.run; if (!r) return;
  const key = `${r.id}:${r.fit ? r.fit.start + "-" + r.fit.stop : ""}:${stagesKey(r)}`;
  if ($("signals-plot")._cacheKey === key) { lineChart($("signals-plot"), [], { cacheKey: key, vline: r.step }); return; }
  // in colour and named: the key frequencies (fitting.key_frequencies), else those a fit uses; the rest grey, one entry
  let named = r.header.key_frequencies || [], what = "the key frequencies";
  if (!named.length && r.header.frequency_rule !== "all") { named = r.header.fit_frequencies || []; what = RULE_NAMES[r.header.frequency_rule] || "fitted frequencies"; }
  const on = new Set(named), colours = {};
  named.forEach((k, i) => { colours[k] = hue(i, Math.max(named.length, 1)); });
  const series = [], legend = named.map(k => ({ label: `k = ${k}`, color: colours[k] }));
  if (on.size < r.K) legend.push({ label: on.size ? "other k" : "all k", color: "#c8c8c8" });
  const x = Array.from(r.steps);
  for (let k = 0; k < r.K; k++) {
    const y = new Array(x.length); for (let i = 0; i < x.length; i++) y[i] = r.signals[i * r.K + k];
    const lit = on.has(k + 1);
    series.push({ x, y, color: lit ? colours[k + 1] : "#c8c8c8", width: lit ? 2 : 1, k: k + 1, on: lit });
  }
  series.sort((a, b) => a.on - b.on);
  if (r.fit) {
    r.fit.frequencies.forEach((k, j) => {
      const s = series.find(t => t.k === k);
      series.push({ x: r.fit.steps, y: r.fit.simulated[j], color: s && s.on ? s.color : "#555", width: 2, dash: [6, 4] });
    });
    legend.push({ label: "ODE fit", color: "#555", dash: [6, 4] });
  }
  $("signals-plot").dataset.legend = legend.map(item => item.label).join(";");
  lineChart($("signals-plot"), series, { xlabel: "step", ylabel: "signal |F_k| (Fourier amplitude)", vline: r.step, cacheKey: key,
    xlim: runXlim(r), bands: stageBands(r),
    title: on.size ? `Fourier signals (in colour: ${what})` : "Fourier signals", legend });
}

// the network's own curves (fitting.network_curves): accuracy and loss, train and validation
const CURVE_STYLE = { train_acc: ["train", "#2b6cb0"], val_acc: ["validation", "#c05621"],
                      train_loss: ["train", "#2b6cb0"], val_loss: ["validation", "#c05621"] };

function drawCurves() {
  const r = state.run; if (!r) return;
  const names = Object.keys(r.curves);
  const acc = names.filter(n => /acc/.test(n)), loss = names.filter(n => /loss/.test(n));
  $("curves-acc-plot").hidden = !acc.length; $("curves-loss-plot").hidden = !loss.length;
  $("curves-note").textContent = names.length ? "the network's own accuracy and loss, as the run recorded them (fitting.network_curves)" :
    "this run records no train or validation curves (log them with EmbeddingRecorder.log(step, train_loss=..., val_acc=...))";
  const key = `${r.id}:${stagesKey(r)}`;
  const style = (n, i) => CURVE_STYLE[n] || [n, hue(i, names.length)];
  if (acc.length) {
    lineChart($("curves-acc-plot"), acc.map((n, i) => ({ x: r.curves[n].x, y: r.curves[n].y, color: style(n, i)[1] })),
      { xlabel: "step", ylabel: "accuracy", ylim: [0, 1.02], xlim: runXlim(r), vline: r.step, cacheKey: key, bands: stageBands(r),
        title: "the network's accuracy", legend: acc.map((n, i) => ({ label: style(n, i)[0], color: style(n, i)[1] })) });
  }
  if (loss.length) {  // log scale: losses fall by orders of magnitude
    const log = v => (v > 0 ? Math.log10(v) : null);
    lineChart($("curves-loss-plot"), loss.map((n, i) => ({ x: r.curves[n].x, y: r.curves[n].y.map(log), color: style(n, i)[1] })),
      { xlabel: "step", ylabel: "loss (log scale)", xlim: runXlim(r), vline: r.step, cacheKey: key, bands: stageBands(r), ylog: true,
        title: "the network's loss", legend: loss.map((n, i) => ({ label: style(n, i)[0], color: style(n, i)[1] })) });
  }
}

// structure metrics arrive while they are computed (up to 0.4 s a snapshot for d = 128)
async function pollMetrics(id) {
  while (state.run && state.run.id === id) {
    let m;
    try { m = await (await api(`/api/runs/${id}/metrics`)).json(); } catch (e) { return; }
    if (!(state.run && state.run.id === id)) return;
    state.run.metrics = m.rows; state.run.metricsNote = m.error || (m.done ? "" : `computing: ${m.rows.length} of ${m.total} snapshots`);
    state.run.accuracy = { shown: m.accuracy_shown, note: m.accuracy_note, label: m.accuracy_label };
    drawRunMetrics();
    if (m.done) return;
    await new Promise(resolve => setTimeout(resolve, 700));
  }
}

function drawRunMetrics() {
  const r = state.run; if (!r || !r.metrics) return;
  if (!r.metrics.length) { const c = $("metrics-plot"); c.getContext("2d").clearRect(0, 0, c.width, c.height); return; }
  const x = r.metrics.map(m => m.step);
  const series = [{ x, y: r.metrics.map(m => m.circularity), color: "#c05621" }];
  // short legend labels (the legend box is narrow); what they measure goes into the note below
  const legend = [{ label: "circularity", color: "#c05621" }];
  const acc = r.accuracy || { shown: true, note: "", label: r.header.accuracy_label };
  let what = "";
  if (acc.shown) {
    series.push({ x, y: r.metrics.map(m => m.accuracy), color: "#2b6cb0" });
    legend.push({ label: "pair-sum acc.", color: "#2b6cb0" });
    what = `pair-sum acc.: the ${acc.label}; ${acc.note}`;
  } else {
    what = `The ${acc.label}: ${acc.note}`;
  }
  if (r.header.d > 2) {  // in d > 2 any embedding is nearly circular in a plane of its own choosing: show the plane's share
    series.push({ x, y: r.metrics.map(m => m.plane_share), color: "#718096", dash: [4, 3] });
    legend.push({ label: "plane share", color: "#718096", dash: [4, 3] });
    what += ". Circularity is measured in its frequency's Fourier plane, which holds the plane share of the variance";
  }
  lineChart($("metrics-plot"), series,
    { xlabel: "step", ylabel: "value", ylim: [0, 1.02], vline: r.step,
      cacheKey: `${r.id}:${r.metrics.length}:${r.metricsNote}:${acc.shown}:${stagesKey(r)}`,
      title: "structure metrics of the embedding" + (r.metricsNote ? ` (${r.metricsNote})` : ""),
      xlim: runXlim(r), legend, bands: stageBands(r) });
  $("metrics-note").textContent = what + ".";
  document.body.dataset.accuracyShown = acc.shown ? "1" : "0";
}

const scrub = { busy: false, next: null };
function drawRunFrame(r, frame) {
  const h = frame.header; r.step = h.step;
  const structure = r.metrics ? (r.metrics.filter(m => m.step <= h.snapshot_step).pop() || {}).structure : null;
  const view = runView(); view.axisNames = h.axes;
  view.draw(frame.arrays.positions.data, { labels: true, p: h.p, title: `step ${h.step} (snapshot at ${h.snapshot_step})` + (structure ? ` · structure class: ${structure}` : "") });
  $("run-step-label").textContent = `step ${h.step}`;
  $("run-snapshot-label").textContent = `embedding of step ${h.snapshot_step}`;
  let caption;
  if (h.d <= 2) caption = `The embedding itself (d = ${h.d}).`;
  else if (h.plane === "pca") caption = `PCA plane: the two leading principal components of the final snapshot. ` +
    `It holds ${pct(h.explained)} of this snapshot's variance (centred over tokens; ${pct(h.final_explained)} of the final one's).`;
  else caption = `Fourier plane of k = ${h.plane}: the final snapshot's vectors Σ_t cos(2πkt/p) E_t and Σ_t sin(2πkt/p) E_t, ` +
    `orthonormalised. It holds ${pct(h.explained)} of this snapshot's variance (centred over tokens; ${pct(h.final_explained)} of the final one's).`;
  const box = $("run-plane-caption"); box.textContent = caption; box.dataset.plane = h.plane;
  drawSignals(); drawRunMetrics(); drawCurves();
}

async function showRunStep(step) {
  scrub.next = { step, t0: performance.now() }; if (scrub.busy) return;
  scrub.busy = true;
  try {
    while (scrub.next !== null) {
      const { step, t0 } = scrub.next; scrub.next = null;
      const r = state.run; if (!r) break;
      const frame = decodeFrame(await (await api(`/api/runs/${r.id}/frame?step=${step}&plane=${encodeURIComponent(r.plane)}`)).arrayBuffer());
      if (state.run !== r) continue;  // another run was opened meanwhile
      drawRunFrame(r, frame);
      document.body.dataset.scrubMs = (performance.now() - t0).toFixed(1);
    }
  } catch (e) { /* shown */ } finally { scrub.busy = false; }
}

function choosePlane(plane) {
  const r = state.run; if (!r) return;
  r.plane = plane; state.runView = null;  // new axes: the view's limits start afresh
  showRunStep(r.step);
}

async function uploadRun(file) {
  try {
    const body = await (await api(`/api/runs?name=${encodeURIComponent(file.name)}`, { method: "POST", body: file })).json();
    clearError(); await loadRunList(body.id);
  } catch (e) { /* shown */ } finally { $("run-file").value = ""; }
}

async function fitWindow() {
  const r = state.run; if (!r) return;
  const num = s => (s.trim() !== "" && isFinite(Number(s)) ? Number(s) : s);
  $("fit-result").textContent = "fitting…";
  try {
    const fit = await (await postJSON(`/api/runs/${r.id}/fit`, { start: num($("fit-start").value), stop: num($("fit-stop").value) })).json();
    if (state.run !== r) return;  // another run was opened meanwhile
    clearError(); r.fit = fit; drawSignals();
    let text = `${fit.model} on steps ${fit.start}-${fit.stop}, ${fit.selection}.`;
    const num3 = v => (v === null || v === undefined ? "undefined" : Number(v.toPrecision(3)).toString());
    if (fit.in_window_error !== null) text += ` Inside the window the simulation misses the data by ${num3(fit.in_window_error)} of its spread` +
      (fit.in_window_error > 0.5 ? ": the fit does not describe this window well." : ".");
    if (fit.forecast) text += ` Forecast from step ${fit.stop} to the end: relative error ${num3(fit.forecast.error)}, ` +
      `persistence ${num3(fit.forecast.persistence_error)}, skill ${fit.forecast.skill === null ?
        "undefined (the run hardly changes after the window)" : num3(fit.forecast.skill)} (1 - error / persistence; > 0 beats persistence).`;
    if (fit.notes.length) text += " " + fit.notes.join(" ");
    $("fit-result").textContent = text;
  } catch (e) { if (state.run === r) $("fit-result").textContent = ""; }
}

// ---- phase ------------------------------------------------------------------------------------------
const CLASS_COLOURS = { circle: "#2f855a", grid: "#2b6cb0", "imperfect grid": "#90cdf4", line: "#d69e2e", unstructured: "#a0aec0", undefined: "#e2e8f0",
  diverged: "#c53030", comprehension: "#2f855a", grokking: "#38a169", memorization: "#c05621", confusion: "#a0aec0" };
const classColour = c => CLASS_COLOURS[c] || "#718096";

// a setting's value in a few characters (grids of learning rates hold values like 1.584893e-05)
function compact(v) {
  if (typeof v !== "number" || Number.isInteger(v)) return String(v);
  return Math.abs(v) >= 1e-3 && Math.abs(v) < 1e4 ? Number(v.toPrecision(3)).toString() : v.toExponential(1);
}

async function loadPhaseList() {
  const body = await (await api("/api/phases")).json();
  const list = $("phase-select"); list.innerHTML = "";
  for (const g of body.phases) { const o = document.createElement("option"); o.value = g.id; o.textContent = `${g.name} (${g.kind})`; list.appendChild(o); }
  if (body.phases.length) await openPhase(Number(list.value));
  else $("phase-info").textContent = "no phase files: give a sweep.csv or a toy-phases .json to embdyn explore";
}

async function openPhase(id) {
  const g = await (await api(`/api/phases/${id}`)).json();
  state.phase = g;
  $("phase-info").textContent = `${g.kind === "sweep" ? "particle sweep" : "toy-model phase grid"}: ${g.y ? g.y + " (rows) × " : ""}${g.x} (columns); ` +
    `colour: the most common ${g.outcome}, darker when more runs agree` + (g.extra_axes.length ? `; also varied: ${g.extra_axes.join(", ")}` : "");
  const legend = $("phase-legend"); legend.innerHTML = "";
  for (const c of g.classes) {
    const row = document.createElement("div"), swatch = document.createElement("span");
    swatch.className = "swatch"; swatch.style.background = classColour(c);
    row.appendChild(swatch); row.appendChild(document.createTextNode(c)); legend.appendChild(row);
  }
  const table = document.createElement("table");
  const ys = g.y_values.slice().reverse();
  for (const y of ys) {
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.textContent = g.y ? `${g.y} = ${compact(y)}` : ""; tr.appendChild(th);
    for (const x of g.x_values) {
      const td = document.createElement("td"); td.className = "cell";
      const cells = g.cells.filter(c => c.x === x && c.y === y);
      if (cells.length) {
        const cell = cells[0];
        td.style.background = classColour(cell.majority); td.style.opacity = (0.35 + 0.65 * cell.share).toFixed(2);
        const n = cell.runs.length;  // one run: its outcome; several: the majority's share
        td.textContent = n === 1 ? cell.majority.slice(0, 5) : `${Math.round(100 * cell.share)}%`; td.title = `${cell.majority}: ${Object.entries(cell.shares).map(([k, v]) => `${k} ${Math.round(100 * v)}%`).join(", ")}`;
        td.dataset.x = x; td.dataset.y = y;
        td.addEventListener("click", () => { for (const s of table.querySelectorAll(".selected")) s.classList.remove("selected"); td.classList.add("selected"); showCell(cells); });
      }
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  const foot = document.createElement("tr"); foot.appendChild(document.createElement("th"));
  for (const x of g.x_values) { const th = document.createElement("th"); th.textContent = compact(x); foot.appendChild(th); }
  table.appendChild(foot);
  const caption = document.createElement("caption"); caption.textContent = `${g.x} →`; caption.style.captionSide = "bottom"; table.appendChild(caption);
  $("phase-grid").innerHTML = ""; $("phase-grid").appendChild(table);
  $("phase-cell").textContent = "click a cell to see its runs";
}

function showCell(cells) {
  const g = state.phase, box = $("phase-cell"); box.innerHTML = "";
  const runs = cells.flatMap(c => c.runs);
  const title = document.createElement("p");
  title.textContent = Object.entries(cells[0].setting).map(([k, v]) => `${k} = ${v}`).join(", ") + ` · ${runs.length} run${runs.length === 1 ? "" : "s"}`;
  box.appendChild(title);
  if (g.live) {
    const button = document.createElement("button"); button.id = "btn-run-live";
    button.textContent = g.base ? "run this setting live" : "set these values live";
    button.title = "sets this cell's settings (and the sweep's base, when its journal is known) and its first seed " +
                   "in the Live tab, and plays";
    button.addEventListener("click", async () => {
      const changes = Object.assign({}, g.base || {}, cells[0].setting);
      if (runs.length && runs[0].seed !== undefined) changes.seed = runs[0].seed;
      showTab("live");
      while (pending.busy) await new Promise(resolve => setTimeout(resolve, 20));  // a request in flight first
      Object.assign(pending.changes, changes);
      await flushControls();
      action("play");
    });
    box.appendChild(button);
  }
  if (g.live_note) {
    const note = document.createElement("p"); note.className = "muted"; note.textContent = g.live_note;
    box.appendChild(note);
  }
  const columns = Object.keys(runs[0]).filter(c => !g.axes.includes(c));
  const table = document.createElement("table");
  const head = table.insertRow();
  for (const c of columns) { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); }
  for (const r of runs) {
    const row = table.insertRow();
    for (const c of columns) {
      const v = r[c];
      row.insertCell().textContent = typeof v === "number" && !Number.isInteger(v) ? v.toPrecision(3) : String(v);
    }
  }
  box.appendChild(table);
}

// ---- start ------------------------------------------------------------------------------------------
async function main() {
  for (const button of document.querySelectorAll("nav button.tab")) button.addEventListener("click", () => showTab(button.dataset.tab));
  // runs given on the command line: open on the Run tab (the Live tab is one click away)
  const given = await api("/api/runs").then(r => r.json()).catch(() => ({ runs: [] }));
  showTab(location.hash.slice(1) || (given.runs && given.runs.length ? "run" : "live"));
  const body = await (await api("/api/controls")).json();
  state.controls = body.controls; state.presets = body.presets;
  buildControls();
  for (const name of ["play", "pause", "step", "reset"]) $("btn-" + name).addEventListener("click", () => action(name));
  $("run-step").addEventListener("input", ev => showRunStep(Number(ev.target.value)));
  $("run-plane").addEventListener("change", ev => choosePlane(ev.target.value));
  $("run-select").addEventListener("change", ev => safeOpenRun(Number(ev.target.value)));
  $("run-file").addEventListener("change", ev => { if (ev.target.files.length) uploadRun(ev.target.files[0]); });
  $("btn-fit").addEventListener("click", fitWindow);
  $("phase-select").addEventListener("change", ev => openPhase(Number(ev.target.value)).catch(() => { /* shown */ }));
  connectLive();
  await Promise.all([loadRunList().catch(() => {}), loadPhaseList().catch(() => {})]);  // failures are shown
  document.body.dataset.ready = "1";
}

main().catch(e => showError(String(e.message || e)));
