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

// a log10 value's tick: the power of ten it stands for (1e-3, 0.01, 0.1, 1, 10, 1e3...)
function powerTick(v) {
  const x = Math.pow(10, v);
  if (Math.abs(v - Math.round(v)) < 1e-9) { const e = Math.round(v); return e >= -2 && e <= 3 ? String(Number(x.toPrecision(1))) : `1e${e}`; }
  return Number(x.toPrecision(2)).toExponential(1).replace("e+", "e");
}

// Axes in a box with ticks and labels; returns the mapping from data to pixels. ``ylog``: the y values are log10
// of the quantity, its ticks are labelled with the quantity itself.
function drawAxes(ctx, box, xr, yr, xlabel, ylabel, title, ylog, titleY) {
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
  let yt = niceTicks(yr[0], yr[1], Math.max(3, Math.floor(height / 45)));
  if (ylog && yr[1] - yr[0] >= 1) {  // whole decades, at most five of them labelled
    const lo = Math.ceil(yr[0]), hi = Math.floor(yr[1]), every = Math.max(1, Math.ceil((hi - lo + 1) / 5));
    yt = []; for (let e = hi; e >= lo; e -= every) yt.unshift(e);
  }
  for (const t of yt) {
    const y = sy(t); ctx.beginPath(); ctx.moveTo(left - 4, y); ctx.lineTo(left, y); ctx.stroke();
    ctx.fillText(ylog ? powerTick(t) : formatTick(t, yt.length > 1 ? yt[1] - yt[0] : Math.abs(t) || 1), left - 6, y);
  }
  ctx.textAlign = "center"; ctx.textBaseline = "bottom";
  ctx.fillText(xlabel, left + width / 2, top + height + 36);
  if (title) { ctx.font = "bold 12px system-ui, sans-serif"; ctx.fillText(title, left + width / 2, titleY === undefined ? top - 4 : titleY); ctx.font = "12px system-ui, sans-serif"; }
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

// Bands of steps (the stages of a run): [{start, stop, label, color}] in x units (start or stop null: from the left or
// to the right edge). Each is shaded lightly over the plot with dashed lines at its ends, and drawn above the plot
// as a bar with its name, in lanes, so that overlapping bands stay readable. ``bandLanes`` places them (lane of
// each band, number of lanes); ``drawBands`` draws them.
const LANE = 13;
function bandLanes(ctx, box, sx, xr, bands) {
  ctx.save(); ctx.font = "10px system-ui, sans-serif";
  const ends = [], placed = [];
  for (const b of bands) {
    const a = sx(b.start === null || b.start === undefined ? xr[0] : b.start);
    const z = sx(b.stop === null || b.stop === undefined ? xr[1] : b.stop);
    const x0 = Math.max(box.left, Math.min(a, z)), x1 = Math.min(box.left + box.width, Math.max(a, z));
    const w = ctx.measureText(b.label).width;
    const tx = Math.max(box.left, Math.min(x0 + 2, box.left + box.width - w));  // the name from the band's start, inside the chart
    const from = Math.min(x0, tx), to = Math.max(x1, tx + w);
    let lane = ends.findIndex(end => end + 6 < from);
    if (lane < 0) { lane = ends.length; ends.push(to); } else ends[lane] = to;
    placed.push({ ...b, a, z, x0, x1, tx, lane });
  }
  ctx.restore();
  return { placed, lanes: ends.length };
}

function drawBands(ctx, box, layout) {
  ctx.save();
  ctx.beginPath(); ctx.rect(box.left, box.top, box.width, box.height); ctx.clip();
  for (const b of layout.placed) {
    if (b.x1 < box.left || b.x0 > box.left + box.width) continue;
    ctx.globalAlpha = 0.10; ctx.fillStyle = b.color; ctx.fillRect(b.x0, box.top, Math.max(b.x1 - b.x0, 1), box.height);
    ctx.globalAlpha = 0.8; ctx.strokeStyle = b.color; ctx.lineWidth = 1; ctx.setLineDash([3, 3]);
    for (const x of [b.a, b.z]) { ctx.beginPath(); ctx.moveTo(x, box.top); ctx.lineTo(x, box.top + box.height); ctx.stroke(); }
    ctx.setLineDash([]); ctx.globalAlpha = 1;
  }
  ctx.restore();
  ctx.save(); ctx.font = "10px system-ui, sans-serif"; ctx.textAlign = "left"; ctx.textBaseline = "top";
  const top = box.top - LANE * layout.lanes - 2;
  for (const b of layout.placed) {
    const y = top + LANE * b.lane;
    ctx.fillStyle = b.color; ctx.fillRect(b.x0, y + 10, Math.max(b.x1 - b.x0, 2), 2.5);
    ctx.fillStyle = "#2d3748"; ctx.fillText(b.label, b.tx, y);
  }
  ctx.restore();
}

// series: [{x, y, color, width, dash, label}]; opts: xlabel, ylabel, title, vline, xlim, ylim, legend, cacheKey,
// bands (bandLanes: drawn over the plot, named in lanes between the title and the plot), ylog (y values are log10 of
// the quantity: ticks say the quantity).
// A legend taller than the chart goes into more columns.
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
  const height = canvas.height - 22 - 48, rows = Math.max(1, Math.floor((height - 6) / 15) + 1);
  const columns = opts.legend ? Math.max(1, Math.ceil(opts.legend.length / rows)) : 0;
  const box = { left: 62, top: 22, width: canvas.width - 62 - (opts.legend ? 8 + 88 * columns : 14), height };
  const xs = [], ys = [];
  for (const s of series) { for (const v of s.x) xs.push(v); for (const v of s.y) ys.push(v); }
  const xr = opts.xlim || range(xs, 0), yr = opts.ylim || range(ys);
  let layout = null;
  if (opts.bands && opts.bands.length) {  // lanes for the bands' names between the title and the plot
    layout = bandLanes(ctx, box, v => box.left + (v - xr[0]) / (xr[1] - xr[0]) * box.width, xr, opts.bands);
    const room = LANE * layout.lanes + 2;
    box.top += room; box.height -= room;
  }
  const { sx, sy } = drawAxes(ctx, box, xr, yr, opts.xlabel, opts.ylabel, opts.title, opts.ylog, layout ? 18 : undefined);
  if (layout) drawBands(ctx, box, layout);
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
    opts.legend.forEach((item, i) => {
      const x = box.left + box.width + 8 + 88 * Math.floor(i / rows), y = box.top + 6 + 15 * (i % rows);
      ctx.strokeStyle = item.color; ctx.lineWidth = 2; ctx.setLineDash(item.dash || []);
      ctx.beginPath(); ctx.moveTo(x, y); ctx.lineTo(x + 18, y); ctx.stroke();
      ctx.setLineDash([]); ctx.fillStyle = "#333"; ctx.fillText(item.label, x + 22, y);
    });
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
