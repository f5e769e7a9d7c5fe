// The Network tab's particle panel: a Live particle session (/api/live, kind particles) started from the network's
// embedding by POST /api/live/{sid}/handover (fitting/explore/handover.py), under the preset's law or the law fitted
// to the network's last steps; its frames carry each term's force when asked. Uses app.js's $, api, postJSON,
// showError, clearError, controlSender, network.js's net and fixed, and plots.js's decodeFrame, EmbeddingView.
"use strict";

const part = { session: null, connecting: null, view: null, values: {}, lastRestarts: -1, structure: null,
               autoDone: false, busy: false, queued: false };
//: colours of the force terms, in particles.law_terms' order
const TERM_COLORS = { attraction: "#2b6cb0", repulsion: "#c53030", alignment_same: "#2f855a", alignment_other: "#b7791f",
                      decay: "#6b46c1", distance: "#2b6cb0", cosine: "#2f855a" };

function connectParticles() {
  if (part.connecting) return part.connecting;
  part.connecting = new Promise((resolve, reject) => {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/live?kind=particles`);
    ws.binaryType = "arraybuffer";
    ws.onclose = ev => {
      part.session = null; part.connecting = null;
      $("hand-status").textContent = ev.reason ? `closed by the server: ${ev.reason}` : "disconnected: reload the page";
      reject(new Error(ev.reason || "the particle session closed"));
    };
    ws.onmessage = ev => {
      if (typeof ev.data === "string") {
        const msg = JSON.parse(ev.data);
        if (msg.type === "hello") { part.session = msg.session; document.body.dataset.particleSession = msg.session; resolve(msg.session); }
        else if (msg.type === "error") showError(msg.error);
        return;
      }
      try { onParticleFrame(decodeFrame(ev.data)); } finally { ws.send(JSON.stringify({ type: "ack" })); }
    };
  });
  return part.connecting;
}

function showParticleValues(values, force) {
  part.values = values;
  for (const name of ["dt", "steps_per_frame"]) {
    const box = $("part-" + name); if (box && (force || document.activeElement !== box)) box.value = values[name];
  }
}

const particleSender = controlSender(() => part.session, (values, force) => showParticleValues(values || part.values, force),
                                     () => { part.view = null; });

function describeLaw(body) {
  const law = body.law;
  if (!body.fit) return `${body.values.preset}'s own: k_a ${fixed(law.k_a, 3)}, sig_a ${fixed(law.sig_a, 3)}, k_r ${fixed(law.k_r, 3)}, lam ${fixed(law.lam, 3)}`;
  const f = body.fit;
  const interval = f.null_r2_interval ? ` [${fixed(f.null_r2_interval[0], 3)}, ${fixed(f.null_r2_interval[1], 3)}]` : "";
  return `fitted to steps ${f.steps[0]}-${f.steps[1]} (${f.snapshots} snapshots): R² ${fixed(f.r2, 3)} ` +
         `against ${fixed(f.null_r2, 3)}${interval} with the tokens relabelled: ${f.verdict || "no verdict"}`;
}

// returns whether a hand-over was started or queued (false before the network is connected); one asked for while
// another is in flight runs when that one ends, with the law and preset chosen then: a click is never dropped
function handOver() {
  const from = net.session;
  if (!from) return false;
  if (part.busy) {
    if (!part.queued) $("hand-status").textContent += " (another hand-over queued)";
    part.queued = true;
    return true;
  }
  part.busy = true;
  runHandOver(from).finally(() => {
    part.busy = false;
    if (part.queued) {
      part.queued = false;
      if (!handOver()) $("hand-status").textContent = "the queued hand-over did not run: the network is not connected";
    }
  });
  return true;
}

async function runHandOver(from) {
  const law = $("hand-law").value, preset = $("hand-preset").value;
  $("hand-status").textContent = law === "fitted" ? "fitting the law to the network's last steps…" : "starting…";
  const wasRunning = part.structure !== null;
  let sid = null;
  try {
    sid = await connectParticles();
    await postJSON(`/api/live/${sid}/action`, { action: "pause" });
    const body = await (await postJSON(`/api/live/${sid}/handover`, { from, law, preset })).json();
    clearError(); part.view = null; showParticleValues(body.values, true);
    const terms = $("part-show-terms").checked ? "on" : "off";
    if (body.values.force_terms !== terms) particleSender.send("force_terms", terms);
    // the fit's warnings (a range at its bound, a search stopped at its limit) said beside it, never hidden
    const warned = body.fit && body.fit.warnings.length ? ` The fit warns: ${body.fit.warnings.join(" ")}` : "";
    const moved = net.session !== from ? " The network tab has since switched to another session: its structure is not this one's." : "";
    $("hand-status").textContent = `started from ${body.origin}.${warned}${moved}`;
    $("hand-law-summary").textContent = describeLaw(body);
    document.body.dataset.handover = `${law}:${body.version}`;
    await postJSON(`/api/live/${sid}/action`, { action: "play" });
  } catch (e) {
    $("hand-status").textContent = `the hand-over did not happen: ${e.message}`;
    if (sid && wasRunning) postJSON(`/api/live/${sid}/action`, { action: "play" }).catch(() => {});  // as it was
  }
}

// called by network.js on every network frame: the automatic hand-over, and the network's structure for the comparison
function networkFrameForParticles(h) {
  $("part-net-structure").textContent = h.structure;
  part.network = h.structure;
  // the automatic hand-over: once per network run (a reset, a restart or another model arms it again)
  const run = `${net.session}:${h.restarts}`;
  if (run !== part.autoRun) { part.autoRun = run; part.autoDone = false; }
  const at = $("hand-at").value.trim();
  if (at !== "" && isFinite(Number(at)) && !part.autoDone && h.step >= Number(at) && handOver()) part.autoDone = true;
  showAgreement();
}

function showAgreement() {
  const box = $("hand-agree");
  if (!part.structure || !part.network) { box.textContent = "–"; delete document.body.dataset.agree; return; }
  const same = part.structure === part.network;
  box.textContent = same ? `agree: both ${part.structure}` : `differ: network ${part.network}, particles ${part.structure}`;
  document.body.dataset.agree = same ? "yes" : "no";
}

function onParticleFrame(frame) {
  const h = frame.header;
  if (h.restarts !== part.lastRestarts) { part.lastRestarts = h.restarts; part.view = null; }
  const step = $("part-step"); step.textContent = h.step; step.dataset.version = h.version;
  $("part-origin").textContent = h.origin || "its own seed (not handed over yet)";
  part.structure = h.origin ? h.structure : null;
  $("part-structure").textContent = h.structure;
  $("part-circularity").textContent = h.circularity === null ? "–" : `${h.circularity.toFixed(3)} (k = ${h.frequency})`;
  showAgreement();
  if (h.error) showError(h.error);
  const sets = (h.terms && $("part-show-terms").checked)
    ? h.terms.map(name => ({ data: frame.arrays["term:" + name].data, color: TERM_COLORS[name] || "#1a202c", label: name })) : null;
  if (!part.view) part.view = new EmbeddingView($("particle-canvas"), ["x1", "x2"]);
  part.view.draw(frame.arrays.positions.data, { labels: true, p: h.p, arrowSets: sets,
    title: `particles: ${h.structure} · step ${h.step}` });
}

function setUpParticlePanel() {
  $("hand-start").addEventListener("click", () => handOver());
  $("hand-at").addEventListener("change", () => { part.autoDone = false; });
  for (const name of ["play", "pause", "reset"]) {
    $("part-" + name).addEventListener("click", async () => {
      if (!part.session) return;
      try { await postJSON(`/api/live/${part.session}/action`, { action: name }); clearError(); } catch (e) { /* shown */ }
    });
  }
  for (const input of document.querySelectorAll("#particle-controls [data-part-control]")) {
    input.addEventListener("change", () => {
      const text = input.value.trim();
      if (text === "") { input.value = part.values[input.dataset.partControl] ?? ""; return; }
      particleSender.send(input.dataset.partControl, isFinite(Number(text)) ? Number(text) : text);
    });
  }
  $("part-show-terms").addEventListener("change", ev => particleSender.send("force_terms", ev.target.checked ? "on" : "off"));
}
setUpParticlePanel();
