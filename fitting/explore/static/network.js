// The Network tab: a registered network (fitting/training/live.py: constant-attention, survival-mlp) trained on the
// server, its frames over the Live tab's WebSocket protocol (/api/live?kind=network&model=NAME). Uses app.js's $, api, postJSON,
// showError, clearError, controlSender and plots.js's decodeFrame, EmbeddingView, lineChart.
"use strict";

const net = { opened: false, session: null, queued: null, ws: null, models: [], meta: null, values: {}, controls: {}, frames: 0, frameTimes: [],
              series: { x: [], ta: [], va: [], tl: [], vl: [] }, lastRestarts: -1, view: null };

async function openNetworkTab() {
  if (net.opened) return;
  net.opened = true;
  let body = null;
  try { body = await (await api("/api/network/controls")).json(); } catch (e) {
    net.opened = false;  // asked again the next time the tab opens; the error is shown by api()
    $("network-status").textContent = "the Network tab could not ask the server for its controls";
    net.queued = null; showQueued(null);
    return;
  }
  if (!body.available) {
    $("network-status").textContent = body.error;
    for (const el of document.querySelectorAll("#network-controls input, #network-controls select, #network-controls button, #particle-controls input, #particle-controls select, #particle-controls button")) el.disabled = true;
    document.body.dataset.network = "unavailable";
    net.queued = null; showQueued(null);
    return;
  }
  net.controls = body.controls;
  net.models = body.models;
  const models = $("net-model");
  for (const m of body.models) { const o = document.createElement("option"); o.textContent = m.name; models.appendChild(o); }
  models.addEventListener("change", () => switchModel(models.value));
  buildNetworkControls();
  switchModel(models.value);
}

function buildNetworkControls() {
  const select = $("net-decay_on");
  for (const choice of net.controls.decay_on.choices) { const o = document.createElement("option"); o.textContent = choice; select.appendChild(o); }
  for (const input of document.querySelectorAll("#network-controls [data-net-control]")) {
    const name = input.dataset.netControl, spec = net.controls[name];
    input.title = `${spec.help}: ${spec.accepted}`;
    if (input.tagName === "SELECT") input.addEventListener("change", () => sendNetworkControl(name, input.value));
    else input.addEventListener("change", () => {
      const text = input.value.trim();
      if (text === "") { input.value = net.values[name]; return; }
      sendNetworkControl(name, isFinite(Number(text)) ? Number(text) : text);
    });
  }
}
// the buttons work from the page's first moment: a click before the session is ready is queued (networkAction)
for (const name of ["play", "pause", "step", "reset"]) $("net-" + name).addEventListener("click", () => networkAction(name));

function showNetworkValues(values, force) {
  net.values = values;
  for (const [name, value] of Object.entries(values)) {
    const box = $("net-" + name); if (box && (force || document.activeElement !== box)) box.value = value;
  }
}

const networkSender = controlSender(() => net.session, (values, force) => showNetworkValues(values || net.values, force),
                                    meta => resetNetwork(meta));
const sendNetworkControl = networkSender.send;

// A play or step asked for before the live session is ready (building a network takes seconds) waits for it: the play
// button says "starting…" until the session's first playing frame; pause drops what waits, reset has nothing to reset.
function showQueued(name) {
  const button = $("net-play");
  button.textContent = name === "play" ? "starting…" : "play";
  button.dataset.state = name === "play" ? "starting" : "";
}

async function networkAction(name) {
  if (!net.session) {
    if (name === "play" || name === "step") net.queued = name;
    else if (name === "pause") net.queued = null;
    showQueued(net.queued);
    return;
  }
  try { await postJSON(`/api/live/${net.session}/action`, { action: name }); clearError(); } catch (e) { /* shown */ }
  if (name === "reset") resetNetworkSeries();
  if (name !== "play") showQueued(null);
}

function runQueued() {
  const name = net.queued; net.queued = null;
  if (name) networkAction(name);
}

function resetNetworkSeries() { net.series = { x: [], ta: [], va: [], tl: [], vl: [] }; }
function resetNetwork(meta) { net.meta = meta; net.view = null; net.frameMs = undefined; resetNetworkSeries(); }
const fixed = (v, digits) => (v === null || v === undefined ? "–" : v.toFixed(digits));

function onNetworkFrame(frame) {
  const h = frame.header;
  if (h.playing && $("net-play").dataset.state === "starting") showQueued(null);  // the queued play runs
  if (h.restarts !== net.lastRestarts) { net.lastRestarts = h.restarts; resetNetworkSeries(); net.view = null; }
  net.frames += 1;
  const now = performance.now(); net.frameTimes.push(now);
  while (net.frameTimes.length && net.frameTimes[0] < now - 1000) net.frameTimes.shift();
  const counter = $("net-step-count"); counter.textContent = h.step; counter.dataset.version = h.version;
  $("net-train-acc").textContent = fixed(h.train_acc, 3);
  $("net-val-acc").textContent = fixed(h.val_acc, 3);
  $("net-train-loss").textContent = fixed(h.train_loss, 4);
  $("net-val-loss").textContent = fixed(h.val_loss, 4);
  $("net-structure").textContent = h.structure;
  $("net-circularity").textContent = h.circularity === null ? "–" : `${h.circularity.toFixed(3)} (k = ${h.frequency})`;
  $("net-fps").textContent = net.frameTimes.length;
  $("net-cut").textContent = h.cut ? `${h.cut.done} of ${h.cut.asked} (cut at the frame's time budget)` : "as set";
  // a model too large to stream at 20 frames a second says so (the frame's compute time, averaged over about ten
  // frames so that one slow frame does not)
  net.frameMs = net.frameMs === undefined ? h.compute_ms : 0.9 * net.frameMs + 0.1 * h.compute_ms;
  $("net-rate").textContent = net.frameMs > 50 ? `${net.frameMs.toFixed(0)} ms: too large for 20 frames a second at ` +
    "these steps a frame (lower steps/frame, hidden or p)" : `${net.frameMs.toFixed(0)} ms`;
  if (h.error) showError(h.error);
  networkFrameForParticles(h);  // handover.js
  const s = net.series;
  if (h.train_acc !== null && (!s.x.length || s.x[s.x.length - 1] !== h.step)) {
    s.x.push(h.step); s.ta.push(h.train_acc); s.va.push(h.val_acc); s.tl.push(h.train_loss); s.vl.push(h.val_loss);
    if (s.x.length > 3000) { for (const arr of Object.values(s)) arr.splice(0, arr.length - 2000); }
  }
  if (!net.view) net.view = new EmbeddingView($("network-canvas"), ["embedding 1", "embedding 2"]);
  net.view.draw(frame.arrays.positions.data, { labels: true, p: h.p,
    pairs: $("net-show-pairs").checked && net.meta ? frame.arrays.pair_sums.data : null,
    pairLabels: net.meta ? net.meta.labels : null,
    arrows: $("net-show-force").checked ? frame.arrays.force.data : null,
    title: `${h.structure} · step ${h.step}` });
  lineChart($("net-accuracy-plot"), [{ x: s.x, y: s.ta, color: "#2b6cb0" }, { x: s.x, y: s.va, color: "#c05621" }],
    { xlabel: "training step", ylabel: "accuracy", ylim: [0, 1.02], title: "accuracy",
      legend: [{ label: "train", color: "#2b6cb0" }, { label: "validation", color: "#c05621" }] });
  lineChart($("net-loss-plot"), [{ x: s.x, y: s.tl, color: "#2b6cb0" }, { x: s.x, y: s.vl, color: "#c05621" }],
    { xlabel: "training step", ylabel: "cross-entropy", title: "loss",
      legend: [{ label: "train", color: "#2b6cb0" }, { label: "validation", color: "#c05621" }] });
}

// another model is another session: the old one is closed (the server stops its training) and a new one opened
function switchModel(name) {
  const model = net.models.find(m => m.name === name);
  $("net-model-description").textContent = model ? model.description : "";
  if (net.ws) { net.ws.onclose = null; net.ws.close(); net.session = null; }
  networkSender.pending.changes = {};  // changes meant for the old model's session
  net.lastRestarts = -1; resetNetwork(null);
  connectNetwork(name);
}

function connectNetwork(model) {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/live?kind=network&model=${encodeURIComponent(model)}`);
  net.ws = ws;
  ws.binaryType = "arraybuffer";
  ws.onclose = ev => {
    if (net.ws !== ws) return;  // a session the page has left for another model
    net.session = null; net.queued = null; showQueued(null);
    $("network-status").textContent = ev.reason ? `closed by the server: ${ev.reason}` : "disconnected: reload the page";
  };
  ws.onmessage = ev => {
    if (net.ws !== ws) return;  // a frame of the session left behind
    if (typeof ev.data === "string") {
      const msg = JSON.parse(ev.data);
      if (msg.type === "hello") {
        net.session = msg.session; resetNetwork(msg.meta); showNetworkValues(msg.meta.values, true);
        document.body.dataset.networkSession = msg.session; document.body.dataset.networkModel = msg.meta.model;
        $("network-status").textContent = "connected";
        runQueued();
      } else if (msg.type === "error") { showError(msg.error); $("network-status").textContent = msg.error; net.queued = null; showQueued(null); }
      return;
    }
    try { onNetworkFrame(decodeFrame(ev.data)); } finally { ws.send(JSON.stringify({ type: "ack" })); }
  };
}
