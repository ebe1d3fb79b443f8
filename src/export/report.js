"use strict";
(function () {
var D, app = document.getElementById("app"), NS = "http://www.w3.org/2000/svg";
var PAL = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function el(tag, at, parent, text) {
	var e = document.createElement(tag), k;
	for (k in at || {}) e.setAttribute(k, at[k]);
	if (text !== undefined) e.textContent = text;
	if (parent) parent.appendChild(e);
	return e;
}
function sv(tag, at, parent, text) {
	var e = document.createElementNS(NS, tag), k;
	for (k in at || {}) e.setAttribute(k, at[k]);
	if (text !== undefined) e.textContent = text;
	if (parent) parent.appendChild(e);
	return e;
}
function fmt(v) {
	if (v === null || v === undefined || !isFinite(v)) return "-";
	var a = Math.abs(v);
	if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
	return String(+v.toPrecision(4));
}
/* Ticks of a time axis (seconds) at round values of its display unit. */
function tticks(lo, hi, n) {
	var sp = hi - lo, d = sp > 7200 ? 3600 : sp > 300 ? 60 : sp < 0.01 ? 1e-6 : sp < 2 ? 1e-3 : 1;
	return ticks(lo / d, hi / d, n).map(function (v) { return +(v * d).toPrecision(12); });
}
function fmtT(s, span) {
	if (span > 7200) return fmt(s / 3600) + " h";
	if (span > 300) return fmt(s / 60) + " min";
	if (span < 0.01) return fmt(s * 1e6) + " \u00b5s";
	if (span < 2) return fmt(s * 1e3) + " ms";
	return fmt(s) + " s";
}
/* Tick label: SI prefix by magnitude, decimals by the tick step. */
function fmtTick(v, st) {
	var a = Math.abs(v) + Math.abs(st), sc = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e4 ? 1e3 : 1;
	var d = Math.max(0, Math.min(9, -Math.floor(Math.log10(st / sc) + 1e-9)));
	return (v / sc).toFixed(d) + (sc === 1e9 ? "G" : sc === 1e6 ? "M" : sc === 1e3 ? "k" : "");
}
function ticks(lo, hi, n) {
	if (!(hi > lo)) { hi = lo + 1; }
	var st = Math.pow(10, Math.floor(Math.log10((hi - lo) / n))), e = (hi - lo) / n / st, out = [], v;
	st *= e > 5 ? 10 : e > 2 ? 5 : e > 1 ? 2 : 1;
	for (v = Math.ceil(lo / st) * st; v <= hi + st * 1e-9; v += st) out.push(+v.toPrecision(12));
	return out;
}
function b64(s) {
	var b = atob(s), u = new Uint8Array(b.length), i;
	for (i = 0; i < b.length; i++) u[i] = b.charCodeAt(i);
	return u;
}
function color(i) { return PAL[i % PAL.length]; }
function heatColor(f) {	/* 0..1 -> viridis-like */
	var r = Math.round(68 + f * (253 - 68)), g = Math.round(1 + f * (231 - 1)), b = Math.round(84 + (f < 0.5 ? f * 2 * (140 - 84) : (1 - f) * 2 * (140 - 84) - 47 * (f - 0.5) * 2));
	return [r, g, Math.max(0, b)];
}
function table(parent, head, rows, cls) {
	var t = el("table", cls ? { "class": cls } : {}, parent), tr;
	if (head.join("")) { tr = el("tr", {}, t); head.forEach(function (h) { el("th", {}, tr, h); }); }
	rows.forEach(function (r) {
		var x = el("tr", r.cls ? { "class": r.cls } : {}, t);
		(r.cells || r).forEach(function (c) {
			el("td", typeof c === "number" ? { "class": "n" } : {}, x, typeof c === "number" ? fmt(c) : c);
		});
	});
	return t;
}
function figure(parent, kind, caption) {
	var f = el("figure", { "class": "plot", "data-kind": kind }, parent);
	f.cap = caption;
	return f;
}
function caption(f, text) { el("figcaption", {}, f, text); }
/* Line plot: o = {w,h,x0,x1,ylab,span,lines:[{x:[],y:[],c,w,pts}],band:{x,lo,hi},marks:[{x,y}]} */
function plot(f, o) {
	var W = o.w || 560, H = o.h || 220, L = 62, R = 10, T = 10, B = 34;
	var s = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" }, f);
	var ylo = Infinity, yhi = -Infinity;
	function upd(v) { if (v !== null && isFinite(v)) { if (v < ylo) ylo = v; if (v > yhi) yhi = v; } }
	(o.lines || []).forEach(function (l) { l.y.forEach(upd); if (l.err) l.y.forEach(function (v, i) { if (v !== null) { upd(v - l.err[i]); upd(v + l.err[i]); } }); });
	if (o.band) { o.band.lo.forEach(upd); o.band.hi.forEach(upd); }
	(o.marks || []).forEach(function (m) { upd(m.y); });
	if (ylo === Infinity) { ylo = 0; yhi = 1; }
	if (ylo === yhi) { ylo -= Math.abs(ylo) * 0.1 + 0.5; yhi += Math.abs(yhi) * 0.1 + 0.5; }
	var x0 = o.x0, x1 = o.x1;
	if (o.autox) (o.lines || []).forEach(function (l) { l.x.forEach(function (v) { if (v < x0) x0 = v; if (v > x1) x1 = v; }); });
	if (!(x1 > x0)) x1 = x0 + 1;
	function X(v) { return L + (v - x0) / (x1 - x0) * (W - L - R); }
	function Y(v) { return T + (1 - (v - ylo) / (yhi - ylo)) * (H - T - B); }
	var yt = ticks(ylo, yhi, 5), yst = yt.length > 1 ? yt[1] - yt[0] : 1;
	yt.forEach(function (v) {
		sv("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), "class": "grid" }, s);
		sv("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, s, fmtTick(v, yst));
	});
	(o.xlab === "phase" ? ticks(x0, x1, 6).filter(function (v) { return v === Math.round(v); }) : tticks(x0, x1, 6)).forEach(function (v) {
		sv("line", { x1: X(v), x2: X(v), y1: H - B, y2: H - B + 4, "class": "ax" }, s);
		sv("text", { x: X(v), y: H - B + 16, "text-anchor": "middle" }, s, o.xlab === "phase" ? fmt(v) : fmtT(v, x1 - x0));
	});
	sv("line", { x1: L, x2: L, y1: T, y2: H - B, "class": "ax" }, s);
	sv("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, "class": "ax" }, s);
	sv("text", { x: 12, y: T + (H - T - B) / 2, transform: "rotate(-90 12 " + (T + (H - T - B) / 2) + ")", "text-anchor": "middle" }, s, o.ylab || "");
	sv("text", { x: L + (W - L - R) / 2, y: H - 4, "text-anchor": "middle" }, s, o.xlab || "time since start of step");
	if (o.band) {
		var up = [], dn = [];
		o.band.x.forEach(function (x, i) {
			if (o.band.hi[i] === null) return;
			up.push(X(x).toFixed(1) + "," + Y(o.band.hi[i]).toFixed(1));
			dn.unshift(X(x).toFixed(1) + "," + Y(o.band.lo[i]).toFixed(1));
		});
		if (up.length) sv("polygon", { points: up.concat(dn).join(" "), fill: "#1f77b4", "fill-opacity": 0.18, stroke: "none", "class": "band" }, s);
	}
	(o.lines || []).forEach(function (l) {
		var d = "", pen = false;
		l.x.forEach(function (x, i) {
			var v = l.y[i];
			if (v === null || !isFinite(v)) return;
			d += (pen ? "L" : "M") + X(x).toFixed(1) + " " + Y(v).toFixed(1);
			pen = true;
			if (l.pts) sv("circle", { cx: X(x), cy: Y(v), r: 2.5, fill: l.c }, s);
			if (l.err) sv("line", { x1: X(x), x2: X(x), y1: Y(v - l.err[i]), y2: Y(v + l.err[i]), stroke: l.c, "stroke-width": 1 }, s);
		});
		if (d) sv("path", { d: d, fill: "none", stroke: l.c, "stroke-width": l.w || 1.2, "class": "line" }, s, undefined);
	});
	(o.marks || []).forEach(function (m) {
		sv("circle", { cx: X(m.x), cy: Y(m.y), r: 4, fill: "none", stroke: "#d00", "stroke-width": 2, "class": "anomaly" }, s);
	});
	return s;
}
/* Heat map on a canvas: rows x cols bytes (255 = none), with labels. */
function heat(f, o) {
	var rows = o.rows, cols = o.cols, L = 40, B = 30, Hc = Math.max(rows, Math.min(360, rows * 6)), Wc = o.w || 480, i;
	var step = Math.max(1, Math.ceil(rows / (Hc / 13))), c = el("canvas", { "class": "heat" }, f), g = c.getContext("2d");
	g.font = "11px sans-serif";
	for (i = 0; i < rows; i += step) L = Math.max(L, Math.min(220, g.measureText(o.label(i)).width + 8));
	c.width = Wc + L + 10; c.height = Hc + B + 6;
	g = c.getContext("2d");
	var img = g.createImageData(cols, rows), v, p, k;
	for (i = 0; i < rows * cols; i++) {
		v = o.q[i];
		p = o.map ? o.map(v) : v === 255 ? [240, 240, 240] : heatColor(v / 254);
		for (k = 0; k < 3; k++) img.data[i * 4 + k] = p[k];
		img.data[i * 4 + 3] = 255;
	}
	var tmp = document.createElement("canvas");
	tmp.width = cols; tmp.height = rows;
	tmp.getContext("2d").putImageData(img, 0, 0);
	g.imageSmoothingEnabled = false;
	g.drawImage(tmp, L, 3, Wc, Hc);
	g.fillStyle = "#333"; g.font = "11px sans-serif"; g.textAlign = "right";
	for (i = 0; i < rows; i += step) g.fillText(o.label(i), L - 4, 3 + (i + 0.5) * Hc / rows + 4);
	g.textAlign = "center";
	if (o.x1 > o.x0) tticks(o.x0, o.x1, 5).forEach(function (t) {
		var x = L + (t - o.x0) / (o.x1 - o.x0) * Wc;
		if (x >= L - 1 && x <= L + Wc + 1) g.fillText(fmtT(t, o.x1 - o.x0), x, Hc + 20);
	});
	return c;
}
function rowLabel(st, s, i) {
	return s.rows === "task" ? "task " + st.tasks[i] : st.nodes[i];
}
function seriesSection(root, st, anoms) {
	var dur = (st.t1 - st.t0) / 1e9, nb = st.bins, xs = [], i;
	for (i = 0; i < nb; i++) xs.push((i + 0.5) / nb * dur);
	el("h3", {}, root, "Time series");
	el("p", {}, root, "Time axis: " + (st.synced ? "synchronized (SyncTimeNs)" : "as recorded (not synchronized)") +
		", " + nb + " bins of " + fmtT(dur / nb, dur) + "; band = min..max over rows, line = mean; heat maps: one row per node or task, colour = bin mean.");
	if (!st.series.length) { el("p", { "class": "warn" }, root, "No time series in this step."); return; }
	st.series.forEach(function (s) {
		var name = s.s + "." + s.f, unit = s.u ? " [" + s.u + "]" : "";
		var f = figure(root, "series");
		f.setAttribute("data-series", name);
		el("div", {}, f, name + unit + (s.delta ? " (rate)" : ""));
		var lines = [{ x: xs, y: s.agg.slice(nb, 2 * nb), c: "#1f77b4", w: 2 }];
		if (s.lines) for (i = 0; i < s.n; i++) lines.push({ x: xs, y: s.lines.slice(i * nb, (i + 1) * nb), c: color(i + 1), w: 1 });
		/* anomalies are raw values: marked on level fields only (delta fields are plotted as rates) */
		var marks = anoms.filter(function (a) { return a[4] === name && !s.delta; }).map(function (a) { return { x: (a[0] - st.t0) / 1e9, y: a[5] }; });
		plot(f, { x0: 0, x1: dur, ylab: s.u || s.f, lines: lines, band: { x: xs, lo: s.agg.slice(0, nb), hi: s.agg.slice(2 * nb) }, marks: marks });
		caption(f, "mean " + fmt(s.stats.mean) + ", sd " + fmt(s.stats.sd) + ", min " + fmt(s.stats.min) + ", max " + fmt(s.stats.max) + unit + "; " + s.n + " " + s.rows + "s" + (marks.length ? "; " + marks.length + " anomalies (red)" : ""));
		var h = figure(root, "heat");
		h.setAttribute("data-series", name);
		el("div", {}, h, name + " per " + s.rows + " (" + fmt(s.heat.lo) + " .. " + fmt(s.heat.hi) + unit + ")");
		heat(h, { rows: s.n, cols: s.heat.bins, q: b64(s.heat.q), x0: 0, x1: dur, label: function (k) { return rowLabel(st, s, k); } });
	});
}
function clockSection(root, st) {
	var c = st.clock, dur = (st.t1 - st.t0) / 1e9, raw = [], cor = [], rows = [];
	el("h3", {}, root, "Clock offsets per node");
	if (!c.with) { el("p", { "class": "warn" }, root, "No clock offsets: no node has usable ClockOffsets measurements."); return; }
	el("p", {}, root, "Raw: measured offset (reference - node clock) with \u00b1 half the round trip. Corrected: what is left after the correction applied in the job file (" + c.correction + ").");
	c.nodes.forEach(function (n, i) {
		var x = [], y = [], e = [], r = [], k, mx = 0, mr = 0;
		for (k = 0; k < n.p.length; k += 4) { x.push(n.p[k]); y.push(n.p[k + 1]); e.push(n.p[k + 2]); r.push(n.p[k + 3]); mx = Math.max(mx, Math.abs(n.p[k + 1])); mr = Math.max(mr, Math.abs(n.p[k + 3])); }
		var many = c.nodes.length > 16;
		raw.push({ x: x, y: y, err: many ? null : e, c: color(i), pts: !many });
		cor.push({ x: x, y: r, err: many ? null : e, c: color(i), pts: !many });
		rows.push([n.node, n.total, x.length, n.dropped + n.bad, mx, mr]);
	});
	var f = figure(root, "clock-raw");
	plot(f, { x0: 0, x1: dur, autox: true, ylab: "offset [ms]", lines: raw });
	caption(f, "Raw clock offsets, " + c.nodes.length + " nodes");
	f = figure(root, "clock-corrected");
	plot(f, { x0: 0, x1: dur, autox: true, ylab: "residual [ms]", lines: cor });
	caption(f, "Corrected: offset minus applied correction");
	rows.sort(function (a, b) { return b[4] - a[4]; });
	var d = el("details", {}, root);
	el("summary", {}, d, "Offsets per node (largest first)");
	table(d, ["node", "measurements", "shown", "left out", "max |offset| ms", "max |residual| ms"], rows.slice(0, 200));
}
function eventsSection(root, st) {
	var E = st.events, dur = (st.t1 - st.t0) / 1e9, nr = E && E.ranks.length / 3, i;
	el("h3", {}, root, "Application events");
	if (st.events_error) el("p", { "class": "err" }, root, "Events unreadable: " + st.events_error);
	if (!E) { el("p", { "class": "warn" }, root, "No application events in this step (run with the sh5 event library to get a timeline, phases and communication)."); return; }
	var x0 = Math.min(0, E.e0), x1 = Math.max(E.e1, x0 + 1e-9);
	el("p", {}, root, E.nev + " records on " + nr + " ranks; times " + (E.synced ? "synchronized (SyncTimeNs)" : "as recorded: NOT synchronized") + "; messages: " + E.sends + " sends, " + E.recvs + " receives, " + E.matched + " matched.");
	E.warnings.forEach(function (w) { el("p", { "class": "warn" }, root, w); });
	table(root, Object.keys(E.kinds), [Object.keys(E.kinds).map(function (k) { return E.kinds[k]; })]);
	function rl(k) { return "rank " + (E.ranks[k * 3 + 1] >= 0 ? E.ranks[k * 3 + 1] : "?") + " (task " + E.ranks[k * 3] + ")"; }
	var f = figure(root, "timeline");
	if (E.exact) {
		var W = 1100, RH = Math.max(8, Math.min(24, 420 / nr)), L = 110, H = nr * RH + 40, s = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H }, f);
		var X = function (t) { return L + (t - E.e0) / (E.e1 - E.e0 || 1) * (W - L - 10); };
		for (i = 0; i < nr; i++) sv("text", { x: L - 4, y: i * RH + RH * 0.7, "text-anchor": "end" }, s, rl(i));
		for (i = 0; i < E.iv.length; i += 6) {
			var row = E.iv[i], nm = E.regions[E.iv[i + 1] * 4], dp = E.iv[i + 2], cl = E.iv[i + 3], a = E.iv[i + 4], b = E.iv[i + 5];
			var r = sv("rect", { x: X(a).toFixed(1), y: (row * RH + Math.min(dp, 3) * 2).toFixed(1), width: Math.max(0.5, X(b) - X(a)).toFixed(1), height: Math.max(2, RH - 2 - Math.min(dp, 3) * 2), fill: cl === 2 ? "#d62728" : cl === 1 ? "#ff7f0e" : "#2ca02c", "class": "region" }, s);
			sv("title", {}, r, nm + ": " + fmtT(b - a, b - a));
		}
		for (i = 0; i < E.msgs.length; i += 5)
			sv("line", { x1: X(E.msgs[i + 1]), y1: E.msgs[i] * RH + RH / 2, x2: X(E.msgs[i + 3]), y2: E.msgs[i + 2] * RH + RH / 2, stroke: "#000", "stroke-width": 0.6, "class": "message" }, s);
		for (i = 0; i < E.colls.length; i += 4)
			sv("rect", { x: X(E.colls[i + 2]), y: E.colls[i] * RH + RH - 3, width: Math.max(0.5, X(E.colls[i + 3]) - X(E.colls[i + 2])), height: 3, fill: "#9467bd", "class": "collective" }, s);
		tticks(E.e0, E.e1, 6).forEach(function (t) { sv("text", { x: X(t), y: H - 8, "text-anchor": "middle" }, s, fmtT(t, E.e1 - E.e0)); });
		el("div", { "class": "legend" }, f).innerHTML = "<span><i style='background:#2ca02c'></i>user region</span><span><i style='background:#ff7f0e'></i>MPI</span><span><i style='background:#d62728'></i>MPI collective</span><span><i style='background:#9467bd'></i>collective begin..end</span><span><i style='background:#000'></i>message</span>";
		caption(f, "Timeline per rank (exact): " + E.iv.length / 6 + " regions, " + E.msgs.length / 5 + " messages shown, " + E.colls.length / 4 + " collectives");
	} else {
		heat(f, { w: 900, rows: nr, cols: E.bins.n, q: b64(E.bins.q), x0: E.e0, x1: E.e1, label: rl, map: function (v) { var fr = (v & 127) / 100; return v & 128 ? [255, Math.round(255 - 200 * fr), Math.round(255 - 200 * fr)] : [Math.round(255 - 40 * fr), Math.round(255 - 150 * fr), Math.round(255 - 230 * fr)]; } });
		caption(f, "Timeline per rank (binned, " + E.bins.n + " bins): colour = fraction of time in MPI (orange p2p, red when collectives lead)");
	}
	var regs = [];
	for (i = 0; i < E.regions.length; i += 4) regs.push([E.regions[i], E.regions[i + 1] ? "MPI" : "user", E.regions[i + 2], E.regions[i + 3], E.regions[i + 3] / nr]);
	regs.sort(function (a, b) { return b[3] - a[3]; });
	el("h3", {}, root, "Regions (inclusive time)");
	table(root, ["region", "kind", "calls", "total s", "mean per rank s"], regs.slice(0, 25), "regions");
	el("h3", {}, root, "Phases: load and imbalance");
	if (!E.phases.length) { el("p", { "class": "warn" }, root, "No phases (PHASE records): no per-phase load or communication matrix."); return; }
	el("p", {}, root, "Load = " + E.load + "; imbalance = max / mean over ranks.");
	f = figure(root, "imbalance");
	var ph = E.phases;
	plot(f, { x0: ph[0].id, x1: ph[ph.length - 1].id, xlab: "phase", ylab: "max / mean", lines: [{ x: ph.map(function (p) { return p.id; }), y: ph.map(function (p) { return p.imb; }), c: "#d62728", pts: true }] });
	caption(f, "Imbalance per phase");
	table(root, ["phase", "max", "mean", "min", "imbalance", "most loaded"], ph.slice(0, 50).map(function (p) { return [p.id, p.max, p.mean, p.min, p.imb, rl(p.argmax)]; }), "phases");
	var sel = el("select", { "aria-label": "phase" }, root), box = el("div", {}, root);
	ph.forEach(function (p, k) { if (p.loads) el("option", { value: k }, sel, "phase " + p.id); });
	function show() {
		var p = ph[+sel.value], W = 560, H = 200, s, k, mx = p.max || 1, bw;
		box.textContent = "";
		var lf = figure(box, "phase-load");
		s = sv("svg", { width: W, height: H }, lf);
		/* at most 512 bars: each the largest load of its group of ranks */
		var nb = Math.min(nr, 512), bars = new Array(nb).fill(0), hot = Math.floor(p.argmax * nb / nr);
		for (k = 0; k < nr; k++) { var gi = Math.floor(k * nb / nr); bars[gi] = Math.max(bars[gi], p.loads[k]); }
		bw = (W - 60) / nb;
		for (k = 0; k < nb; k++) sv("rect", { x: 50 + k * bw, y: 10 + (1 - bars[k] / mx) * (H - 40), width: Math.max(0.5, bw - 1), height: bars[k] / mx * (H - 40), fill: k === hot ? "#d62728" : "#1f77b4", "class": "bar" }, s);
		sv("line", { x1: 50, x2: W - 10, y1: 10 + (1 - p.mean / mx) * (H - 40), y2: 10 + (1 - p.mean / mx) * (H - 40), stroke: "#000", "stroke-dasharray": "4 3" }, s);
		sv("text", { x: 46, y: 14, "text-anchor": "end" }, s, fmt(mx));
		sv("text", { x: 46, y: H - 30, "text-anchor": "end" }, s, "0");
		sv("text", { x: 50 + (W - 60) / 2, y: H - 10, "text-anchor": "middle" }, s, "rank (" + nr + (nb < nr ? ", " + nb + " bars of the group maximum" : "") + "), dashed = mean");
		caption(lf, "Load per rank, phase " + p.id + ": imbalance " + fmt(p.imb));
		var mf = figure(box, "comm-matrix"), D = E.D, q = new Uint8Array(D * D), m = Math.max.apply(null, p.mat.concat([0]));
		for (k = 0; k < D * D; k++) q[k] = p.mat[k] > 0 ? Math.round(p.mat[k] / m * 254) : 255;
		heat(mf, { rows: D, cols: D, q: q, x0: 0, x1: 0, label: function (k) { return E.matrix === "rank" ? rl(k) : D === E.evnodes.length ? E.evnodes[k] : "node group " + k; } });
		caption(mf, "Bytes sent, phase " + p.id + " (row: sender " + E.matrix + ", column: receiver; max " + fmt(m) + " B)");
	}
	sel.onchange = show;
	if (sel.options.length) show();
}
function countersSection(root) {
	var A = D.anomalies, rows = [], seen = {};
	el("h2", {}, root, "Counter statistics and anomalies");
	if (A) A.top.forEach(function (a) { seen[a[4]] = (seen[a[4]] || 0) + 1; });
	D.steps.forEach(function (st) {
		st.series.forEach(function (s) {
			var n = s.s + "." + s.f;
			rows.push({ cls: seen[n] ? "anom" : "", cells: [st.name, n, s.u, s.stats.count, s.stats.mean, s.stats.sd, s.stats.min, s.stats.max, seen[n] ? String(seen[n]) : ""] });
		});
	});
	table(root, ["step", "counter", "unit", "values", "mean", "sd", "min", "max", "top anomalies"], rows, "counters");
	if (!A) { el("p", { "class": "warn" }, root, "Anomalies not computed."); return; }
	el("p", {}, root, A.count + " values beyond " + A.sigma + " standard deviations of their counter's mean (SSTD) in " + A.series + " series; the " + A.top.length + " highest scores:");
	table(root, ["time (UTC)", "step", "node", "task", "counter", "value", "score (sd)", "mean", "sd"], A.top.map(function (a) {
		return { cls: "anom", cells: [new Date(a[0] / 1e6).toISOString(), a[1], a[2], a[3] >= 0 ? String(a[3]) : "-", a[4], a[5], a[6], a[7], a[8]] };
	}), "anomalies");
}
function summary(root) {
	var kv = [], nodes = 0, tasks = 0;
	el("h1", {}, root, "sh5 job report");
	kv.push(["file", D.file], ["report made", D.made + " by sh5 " + D.version]);
	for (var i = 0; i < D.job.length; i += 2) kv.push([D.job[i], String(D.job[i + 1])]);
	D.steps.forEach(function (st) { nodes = Math.max(nodes, st.nodes.length); tasks += st.tasks.length; });
	kv.push(["steps", String(D.steps.length)], ["nodes (largest step)", String(nodes)], ["tasks (all steps)", String(tasks)]);
	D.steps.forEach(function (st) {
		var d = (st.t1 - st.t0) / 1e9;
		kv.push(["step " + st.name, st.nodes.length + " nodes, " + st.tasks.length + " tasks, " + fmtT(d, d) + " from " + new Date(st.t0 / 1e6).toISOString() + ", " + st.series.length + " counters" + (st.events ? ", " + st.events.nev + " events" : "")]);
	});
	var sync = [];
	for (i = 0; i < D.merge.length; i += 2) if (/Sync|Options|Merge Time|Partial/.test(D.merge[i])) sync.push([D.merge[i], String(D.merge[i + 1])]);
	table(root, ["", ""], kv, "summary");
	var tot = [];
	D.steps.forEach(function (st) {
		st.series.forEach(function (s) {
			tot.push([st.name, s.s + "." + s.f, s.delta ? "sum " + fmt(s.stats.sum) + (s.stats.unit ? " " + s.stats.unit : "") : "mean " + fmt(s.stats.mean) + ", max " + fmt(s.stats.max) + (s.u ? " " + s.u : ""), s.n + " " + s.rows + "s"]);
		});
	});
	if (tot.length) {
		var dt = el("details", {}, root);
		el("summary", {}, dt, "Totals per series (" + tot.length + " counters)");
		table(dt, ["step", "counter", "total (delta fields) or mean, max", "rows"], tot, "totals");
	}
	el("h3", {}, root, "Synchronization and merge");
	if (sync.length) table(root, ["", ""], sync, "sync"); else el("p", { "class": "warn" }, root, "No merge or synchronization records (/Merge): times are as recorded.");
	if (D.nmissing) {
		var w = el("div", { "class": "warn", id: "missing" }, root);
		el("b", {}, w, "Missing from this job file: ");
		var ul = el("ul", {}, w);
		D.missing.forEach(function (m) { el("li", {}, ul, m); });
		if (D.nmissing > D.missing.length) el("li", {}, ul, (D.nmissing - D.missing.length) + " more");
	}
}
try {
	D = JSON.parse(document.getElementById("data").textContent);
	summary(app);
	var anoms = D.anomalies ? D.anomalies.top : [];
	D.steps.forEach(function (st) {
		var sec = el("section", { "class": "step", "data-step": st.name }, app);
		el("h2", {}, sec, "Step " + st.name);
		seriesSection(sec, st, anoms.filter(function (a) { return a[1].split(".").pop() === st.name; }));
		clockSection(sec, st);
		eventsSection(sec, st);
	});
	countersSection(app);
	document.body.setAttribute("data-ready", "1");
} catch (e) {
	el("p", { "class": "err" }, app, "Report script failed: " + e);
	console.error("report: " + e + (e.stack ? "\n" + e.stack : ""));
}
})();
