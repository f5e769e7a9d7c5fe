// Drawing on canvases: frames decoded from the server, line charts, embeddings.
"use strict";

// The binary frame of fitting/explore/frames.py: b"EDF1", uint32 header length, JSON header, float32 arrays.
function decodeFrame(buffer) {
  const view = new DataView(buffer);
  const magic = String.fromCharCode(view.getUint8(0), view.getUint8(1), view.getUint8(2), view.getUint8(3));
  if (magic !== "EDF1") throw new Error("not an explorer frame");
  const n = view.getUint32(4, true);
  const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, n)));
  let offset = 8 + n;
  const arrays = {};
  for (const [name, shape] of header.arrays) {
    const size = shape.reduce((a, b) => a * b, 1);
    arrays[name] = { data: new Float32Array(buffer, offset, size), shape: shape };
    offset += 4 * size;
  }
  delete header.arrays;
  return { header, arrays };
}

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) { hi = lo + 1; }
  const span = hi - lo, raw = span / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= raw) || 10 * mag;
  const ticks = [], first = Math.ceil(lo / step);
  // by index, at most a few dozen: a step below the numbers' resolution would never advance v += step
  for (let i = 0; i <= 50; i++) {
    const v = (first + i) * step;
    if (v > hi + step * 1e-9) break;
    ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

// a tick's label with as many digits as its spacing needs (so neighbouring ticks never read alike)
function formatTick(v, step) {
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) {
    const digits = Math.max(0, Math.min(8, Math.ceil(Math.log10(a / step))));
    return v.toExponential(digits);
  }
  const decimals = Math.max(0, Math.min(10, -Math.floor(Math.log10(step) + 1e-9)));
  return v.toFixed(decimals);
}

// Axes in a box with ticks and labels; returns the mapping from data to pixels.
function drawAxes(ctx, box, xr, yr, xlabel, ylabel, title) {
  const { left, top, width, height } = box;
  const sx = v => left + (v - xr[0]) / (xr[1] - xr[0]) * width;
  const sy = v => top + height - (v - yr[0]) / (yr[1] - yr[0]) * height;
  ctx.strokeStyle = "#999"; ctx.lineWidth = 1; ctx.strokeRect(left, top, width, height);
  ctx.fillStyle = "#333"; ctx.font = "12px system-ui, sans-serif";
  ctx.textAlign = "center"; ctx.textBaseline = "top";
  const xt = niceTicks(xr[0], xr[1], Math.max(3, Math.floor(width / 70)));
  for (const t of xt) {
    const x = sx(t); ctx.beginPath(); ctx.moveTo(x, top + height); ctx.lineTo(x, top + height + 4); ctx.stroke();
    ctx.fillText(formatTick(t, xt.length > 1 ? xt[1] - xt[0] : Math.abs(t) || 1), x, top + height + 6);
  }
  ctx.textAlign = "right"; ctx.textBaseline = "middle";
  const yt = niceTicks(yr[0], yr[1], Math.max(3, Math.floor(height / 45)));
  for (const t of yt) {
    const y = sy(t); ctx.beginPath(); ctx.moveTo(left - 4, y); ctx.lineTo(left, y); ctx.stroke();
    ctx.fillText(formatTick(t, yt.length > 1 ? yt[1] - yt[0] : Math.abs(t) || 1), left - 6, y);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "bottom";
  ctx.fillText(xlabel, left + width / 2, top + height + 36);
  if (title) { ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillText(title, left + width / 2, top - 4); ctx.font = "12px system-ui, sans-serif"; }
  ctx.save(); ctx.translate(left - 46, top + height / 2); ctx.rotate(-Math.PI / 2);
  ctx.textBaseline = "bottom"; ctx.fillText(ylabel, 0, 0); ctx.restore();
  return { sx, sy };
}

function range(values, pad) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) { if (v !== null && isFinite(v)) { if (v < lo) lo = v; if (v > hi) hi = v; } }
  if (!isFinite(lo)) { lo = 0; hi = 1; }
  if (hi - lo < 1e-9 * Math.max(1, Math.abs(hi))) { const h = 0.05 * Math.max(1, Math.abs(hi)); lo -= h; hi += h; }
  const p = (hi - lo) * (pad === undefined ? 0.05 : pad);
  return [lo - p, hi + p];
}

function drawVline(ctx, map, x) {
  if (x === undefined || x === null) return;
  ctx.save(); ctx.beginPath(); ctx.rect(map.box.left, map.box.top, map.box.width, map.box.height); ctx.clip();
  ctx.strokeStyle = "#000"; ctx.lineWidth = 1; ctx.beginPath();
  ctx.moveTo(map.sx(x), map.box.top); ctx.lineTo(map.sx(x), map.box.top + map.box.height); ctx.stroke();
  ctx.restore();
}

// series: [{x, y, color, width, dash, label}]; opts: xlabel, ylabel, title, vline, xlim, ylim, legend, cacheKey.
// With cacheKey, the chart without its vertical line is kept as an image: the next call with the same key
// only copies it and draws the line (scrubbing redraws nothing else).
function lineChart(canvas, series, opts) {
  const ctx = canvas.getContext("2d");
  if (opts.cacheKey !== undefined && canvas._cacheKey === opts.cacheKey) {
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.drawImage(canvas._background, 0, 0);
    drawVline(ctx, canvas._map, opts.vline);
    return;
  }
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const box = { left: 62, top: 22, width: canvas.width - 62 - (opts.legend ? 96 : 14), height: canvas.height - 22 - 48 };
  const xs = [], ys = [];
  for (const s of series) { for (const v of s.x) xs.push(v); for (const v of s.y) ys.push(v); }
  const xr = opts.xlim || range(xs, 0), yr = opts.ylim || range(ys);
  const { sx, sy } = drawAxes(ctx, box, xr, yr, opts.xlabel, opts.ylabel, opts.title);
  ctx.save(); ctx.beginPath(); ctx.rect(box.left, box.top, box.width, box.height); ctx.clip();
  for (const s of series) {
    ctx.strokeStyle = s.color; ctx.lineWidth = s.width || 1.5; ctx.setLineDash(s.dash || []);
    ctx.beginPath(); let pen = false;
    for (let i = 0; i < s.x.length; i++) {
      const y = s.y[i];
      if (y === null || !isFinite(y)) { pen = false; continue; }
      const px = sx(s.x[i]), py = sy(y);
      if (pen) ctx.lineTo(px, py); else { ctx.moveTo(px, py); pen = true; }
    }
    ctx.stroke();
    if (s.x.length <= 40 && !s.dash) {  // few samples: mark them
      ctx.fillStyle = s.color;
      for (let i = 0; i < s.x.length; i++) {
        const y = s.y[i]; if (y === null || !isFinite(y)) continue;
        ctx.beginPath(); ctx.arc(sx(s.x[i]), sy(y), 2.5, 0, 2 * Math.PI); ctx.fill();
      }
    }
  }
  ctx.setLineDash([]);
  ctx.restore();
  if (opts.legend) {
    ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.textBaseline = "middle";
    let y = box.top + 6;
    for (const item of opts.legend) {
      ctx.strokeStyle = item.color; ctx.lineWidth = 2; ctx.setLineDash(item.dash || []);
      ctx.beginPath(); ctx.moveTo(box.left + box.width + 8, y); ctx.lineTo(box.left + box.width + 26, y); ctx.stroke();
      ctx.setLineDash([]); ctx.fillStyle = "#333"; ctx.fillText(item.label, box.left + box.width + 30, y);
      y += 15;
    }
  }
  const map = { sx, sy, box };
  if (opts.cacheKey !== undefined) {
    const background = canvas._background || document.createElement("canvas");
    background.width = canvas.width; background.height = canvas.height;
    const bctx = background.getContext("2d"); bctx.clearRect(0, 0, canvas.width, canvas.height); bctx.drawImage(canvas, 0, 0);
    canvas._background = background; canvas._cacheKey = opts.cacheKey; canvas._map = map;
  }
  drawVline(ctx, map, opts.vline);
}

function hue(i, n) { return `hsl(${Math.round(360 * i / Math.max(1, n))}, 70%, 45%)`; }

// An embedding view whose axes follow the structure: square limits that grow at once and shrink smoothly.
class EmbeddingView {
  constructor(canvas, axisNames) { this.canvas = canvas; this.limits = null; this.axisNames = axisNames || ["x1", "x2"]; }
  follow(points) {
    let lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    for (const pts of points) {
      for (let i = 0; i < pts.length; i += 2) {
        for (let k = 0; k < 2; k++) { const v = pts[i + k]; if (isFinite(v)) { if (v < lo[k]) lo[k] = v; if (v > hi[k]) hi[k] = v; } }
      }
    }
    if (!isFinite(lo[0])) return;
    const cx = (lo[0] + hi[0]) / 2, cy = (lo[1] + hi[1]) / 2;
    const half = Math.max(hi[0] - lo[0], hi[1] - lo[1], 1e-9) * 0.56;
    const target = [cx - half, cx + half, cy - half, cy + half];
    if (!this.limits) { this.limits = target; return; }
    const cur = this.limits, a = 0.25;
    const grow = target[0] < cur[0] || target[1] > cur[1] || target[2] < cur[2] || target[3] > cur[3];
    this.limits = grow ? target : cur.map((v, i) => v + a * (target[i] - v));
  }
  draw(tokens, opts) {
    const ctx = this.canvas.getContext("2d");
    const W = this.canvas.width, H = this.canvas.height;
    ctx.clearRect(0, 0, W, H);
    const layers = [tokens]; if (opts.pairs) layers.push(opts.pairs);
    this.follow(layers);
    const [x0, x1, y0, y1] = this.limits;
    const box = { left: 58, top: 22, width: W - 58 - 12, height: H - 22 - 48 };
    const { sx, sy } = drawAxes(ctx, box, [x0, x1], [y0, y1], this.axisNames[0], this.axisNames[1], opts.title);
    ctx.save(); ctx.beginPath(); ctx.rect(box.left, box.top, box.width, box.height); ctx.clip();
    if (opts.pairs) {
      const n = opts.pairs.length / 2;
      for (let i = 0; i < n; i++) {
        ctx.fillStyle = hue(opts.pairLabels[i], opts.p); ctx.globalAlpha = 0.45;
        ctx.beginPath(); ctx.arc(sx(opts.pairs[2 * i]), sy(opts.pairs[2 * i + 1]), 2.2, 0, 2 * Math.PI); ctx.fill();
      }
      ctx.globalAlpha = 1;
    }
    const p = tokens.length / 2;
    // vectors per token: ``arrows`` one set (dark), ``arrowSets`` [{data, color, label}] several on one scale;
    // the longest of all drawn at an eighth of the view
    const sets = opts.arrowSets || (opts.arrows ? [{ data: opts.arrows, color: "#1a202c" }] : []);
    let longest = 0;
    for (const set of sets) for (let i = 0; i < p; i++) longest = Math.max(longest, Math.hypot(set.data[2 * i], set.data[2 * i + 1]));
    const scale = longest > 0 ? (x1 - x0) / 8 / longest : 0;
    ctx.lineWidth = 1.3;
    for (const set of sets) {
      ctx.strokeStyle = set.color;
      for (let i = 0; i < p; i++) {
        const ax = sx(tokens[2 * i]), ay = sy(tokens[2 * i + 1]);
        const bx = sx(tokens[2 * i] + scale * set.data[2 * i]), by = sy(tokens[2 * i + 1] + scale * set.data[2 * i + 1]);
        if (Math.hypot(bx - ax, by - ay) < 0.5) continue;
        const t = Math.atan2(by - ay, bx - ax);
        ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by);
        ctx.lineTo(bx - 6 * Math.cos(t - 0.4), by - 6 * Math.sin(t - 0.4)); ctx.moveTo(bx, by);
        ctx.lineTo(bx - 6 * Math.cos(t + 0.4), by - 6 * Math.sin(t + 0.4)); ctx.stroke();
      }
    }
    if (sets.some(set => set.label)) {  // the legend, top left
      ctx.font = "12px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.textBaseline = "top";
      sets.forEach((set, k) => {
        const y = box.top + 6 + 16 * k;
        ctx.fillStyle = "rgba(255,255,255,0.8)"; ctx.fillRect(box.left + 4, y - 2, 150, 16);
        ctx.fillStyle = set.color; ctx.fillRect(box.left + 8, y + 4, 16, 3);
        ctx.fillStyle = "#222"; ctx.fillText(set.label || "", box.left + 30, y);
      });
    }
    ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.textBaseline = "bottom";
    for (let i = 0; i < p; i++) {
      const px = sx(tokens[2 * i]), py = sy(tokens[2 * i + 1]);
      ctx.fillStyle = hue(i, p); ctx.beginPath(); ctx.arc(px, py, 5, 0, 2 * Math.PI); ctx.fill();
      if (opts.labels) { ctx.fillStyle = "#222"; ctx.fillText(String(i), px + 5, py - 3); }
    }
    ctx.restore();
  }
}
