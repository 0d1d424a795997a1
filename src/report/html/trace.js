/* trace.js - the report's Trace view: a flame chart of every range of the window (docs/REPORT.md,
 * "Trace view"), drawn on one canvas from the columns of the report data's "trace" member
 * (src/report/trace_view.c writes them), or of tprof serve's api/trace for the open run.
 *
 * Layout: one lane per thread, GPU stream and rank, one row per depth of nesting; the data comes
 * ordered by lane, depth and start, so each row is a contiguous run of ranges whose starts, and
 * the running maximum of whose ends, grow. A frame draws each row on screen from the first range
 * ending at or after the view's start (a binary search) to the last starting at or before its
 * end; a range
 * narrower than a pixel is merged with every range starting in the same pixel column (one more
 * binary search), so a frame costs about a box per pixel and row whatever the zoom, and every
 * range in view is drawn, alone or inside such a block. Labels are drawn in boxes wide enough,
 * cut with an ellipsis.
 *
 * Keys (with the view shown, no input focused): W/S zoom in/out, A/D pan, as in Perfetto;
 * Ctrl+wheel zooms at the pointer, Shift+wheel or a horizontal wheel pans, the plain wheel
 * scrolls the lanes; dragging pans; a click selects a range and shows its args and its linked
 * ranges (same correlation id: a launch and its GPU work; same External id: an op, its launches
 * and their kernels), outlined and joined by lines. window.tprofTrace exposes the state the
 * browser tests read (stats(), the visible range, selection). It runs before report.js, which
 * calls it through window.tprofViews. */
(function () {
  'use strict';

  var ROW = 17, LANE_GAP = 6, AXIS = 22, LABEL_W = 230, FONT = '11px system-ui, sans-serif';
  var HUES = [212, 142, 38, 0, 262, 190, 330, 90, 24, 238, 170, 52];

  var T = null;   /* the parsed trace and its layout */
  var ui = null;  /* the DOM of the view */
  var state = { v0: 0, v1: 1, sel: -1, links: [], lastMs: 0, drawn: 0, boxes: 0, merged: 0 };

  function fmtNs(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' \u00b5s';
    return ns.toFixed(0) + ' ns';
  }

  function make(tag, style, text) {
    var e = document.createElement(tag);
    if (style) e.setAttribute('style', style);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* ---- the data: columns to typed arrays, rows, lanes and their heights ---- */

  function parse(t) {
    var n = t.ranges, rows = t.rows, i, r;
    var start = new Float64Array(n), dur = new Float64Array(n), endMax = new Float64Array(n);
    var rowOf = new Int32Array(n);
    var nrows = rows.length, rowFirst = new Int32Array(nrows + 1), rowLane = new Int32Array(nrows);
    var rowDepth = new Int32Array(nrows);
    for (r = 0; r < nrows; r++) {
      rowLane[r] = rows[r][0]; rowDepth[r] = rows[r][1]; rowFirst[r] = rows[r][2];
    }
    rowFirst[nrows] = n;
    for (r = 0; r < nrows; r++) {
      var s = 0, m = -Infinity;
      for (i = rowFirst[r]; i < rowFirst[r + 1]; i++) {
        s += t.start[i];          /* delta-coded: from t0 for a row's first, else from the last */
        start[i] = s;
        dur[i] = t.dur[i];
        m = Math.max(m, s + dur[i]);
        endMax[i] = m;
        rowOf[i] = r;
      }
    }
    var lanes = t.lanes.map(function (l) { return { name: l.name, group: l.group, gpu: l.gpu, rows: 1, top: 0 }; });
    for (r = 0; r < nrows; r++) lanes[rowLane[r]].rows = Math.max(lanes[rowLane[r]].rows, rowDepth[r] + 1);
    var y = AXIS;
    lanes.forEach(function (l) { l.top = y; y += l.rows * ROW + LANE_GAP; });
    return { src: t, n: n, start: start, dur: dur, endMax: endMax, rowOf: rowOf, nrows: nrows,
             rowFirst: rowFirst, rowLane: rowLane, rowDepth: rowDepth, lanes: lanes, height: y,
             span: Math.max(t.span_ns, 1), name: t.name, names: t.names, byCorr: null, byExt: null };
  }

  /* The first i in [lo, hi) with a[i] > x (a non-decreasing), else hi. */
  function firstAbove(a, lo, hi, x) {
    while (lo < hi) {
      var mid = (lo + hi) >>> 1;
      if (a[mid] > x) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  /* The first i in [lo, hi) with a[i] >= x, else hi. */
  function firstAtLeast(a, lo, hi, x) {
    while (lo < hi) {
      var mid = (lo + hi) >>> 1;
      if (a[mid] >= x) hi = mid; else lo = mid + 1;
    }
    return lo;
  }

  /* The fill of range i, by its name: built once (a style string parsed per box costs more than
   * the box). Merged blocks are greyer. */
  var COLORS = [0, 1, 2, 3].map(function (v) {
    var gpu = v & 1, merged = v >> 1;
    return HUES.map(function (h) {
      return 'hsl(' + h + ',' + (merged ? 25 : gpu ? 55 : 65) + '%,' + (gpu ? 42 : 52) + '%)';
    });
  });
  function color(i, gpu, merged) {
    return COLORS[(gpu ? 1 : 0) + (merged ? 2 : 0)][T.name[i] % HUES.length];
  }

  /* ---- drawing ---- */

  function rowY(r) { return T.lanes[T.rowLane[r]].top + T.rowDepth[r] * ROW; }

  function label(g, text, x, y, w, charW) {
    var fit = Math.floor((w - 6) / charW);
    if (fit < 2) return;
    g.fillText(text.length > fit ? text.slice(0, fit - 1) + '\u2026' : text, x + 3, y + 12);
  }

  /* Draws row r's ranges between v0 and v1; returns how many ranges it covered. */
  function drawRow(g, r, y, plotW, charW) {
    var v0 = state.v0, scale = plotW / (state.v1 - state.v0), lo = T.rowFirst[r], hi = T.rowFirst[r + 1];
    var gpu = T.lanes[T.rowLane[r]].gpu, covered = 0;
    var i = firstAtLeast(T.endMax, lo, hi, v0);
    var end = firstAbove(T.start, i, hi, state.v1);
    while (i < end) {
      var x0 = (T.start[i] - v0) * scale, x1 = (T.start[i] + T.dur[i] - v0) * scale;
      if (x1 - x0 >= 1) {
        var a = Math.max(x0, -1), b = Math.min(x1, plotW + 1);
        g.fillStyle = color(i, gpu, false);
        g.fillRect(LABEL_W + a, y + 1, b - a, ROW - 2);
        state.boxes++;
        if (b - a > 3 * charW) { g.fillStyle = '#fff'; label(g, T.names[T.name[i]], LABEL_W + a, y, b - a, charW); }
        covered++;
        i++;
        continue;
      }
      /* sub-pixel: one block for every range starting in this pixel column */
      var px = Math.floor(x0), j = firstAtLeast(T.start, i + 1, end, v0 + (px + 1) / scale);
      var xe = Math.max(px + 1, Math.min((T.endMax[j - 1] - v0) * scale, plotW + 1));
      g.fillStyle = color(i, gpu, j - i > 1);
      g.fillRect(LABEL_W + Math.max(px, -1), y + 1, xe - Math.max(px, -1), ROW - 2);
      state.merged += j - i > 1 ? 1 : 0;
      state.boxes++;
      covered += j - i;
      i = j;
    }
    return covered;
  }

  /* A tick's time in the unit of the step, with as many decimals as the step needs. */
  function tick(t, step) {
    var unit = step >= 1e8 ? [1e9, ' s'] : step >= 1e5 ? [1e6, ' ms'] : step >= 100 ? [1e3, ' \u00b5s'] : [1, ' ns'];
    var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / unit[0]) + 1e-9)));
    return (t / unit[0]).toFixed(digits) + unit[1];
  }

  function drawAxis(g, w, plotW) {
    var span = state.v1 - state.v0, step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    if (span / step > 16) step *= 5; else if (span / step > 8) step *= 2;
    g.fillStyle = '#fff'; g.fillRect(0, 0, w, AXIS);
    g.strokeStyle = '#e2e8f0'; g.fillStyle = '#475569';
    for (var t = Math.ceil(state.v0 / step) * step; t <= state.v1; t += step) {
      var x = LABEL_W + (t - state.v0) / span * plotW;
      g.beginPath(); g.moveTo(x + 0.5, AXIS - 6); g.lineTo(x + 0.5, AXIS); g.stroke();
      g.fillText(tick(t, step), x + 2, 12);
    }
    g.strokeStyle = '#cbd5e1';
    g.beginPath(); g.moveTo(0, AXIS - 0.5); g.lineTo(w, AXIS - 0.5); g.stroke();
  }

  /* The box of range i on screen (scroll taken off), x clamped to the plot. */
  function boxOf(i, plotW, scroll) {
    var scale = plotW / (state.v1 - state.v0);
    var x0 = (T.start[i] - state.v0) * scale, x1 = Math.max(x0 + 1, (T.start[i] + T.dur[i] - state.v0) * scale);
    return { x0: LABEL_W + Math.max(-2, x0), x1: LABEL_W + Math.min(plotW + 2, x1), y: rowY(T.rowOf[i]) - scroll };
  }

  function drawSelection(g, plotW, scroll) {
    if (state.sel < 0) return;
    var s = boxOf(state.sel, plotW, scroll);
    g.lineWidth = 2;
    g.strokeStyle = '#0f172a';
    g.strokeRect(s.x0, s.y + 1, s.x1 - s.x0, ROW - 2);
    state.links.forEach(function (k) {
      var b = boxOf(k, plotW, scroll);
      g.strokeStyle = '#dc2626';
      g.strokeRect(b.x0, b.y + 1, b.x1 - b.x0, ROW - 2);
      g.beginPath();
      g.moveTo(s.x0, s.y + ROW / 2);
      g.lineTo(b.x0, b.y + ROW / 2);
      g.stroke();
    });
    g.lineWidth = 1;
  }

  function draw() {
    if (!T || !ui) return;
    var t0 = performance.now();
    var c = ui.canvas, w = ui.box.clientWidth || 1000, h = Math.min(T.height, ui.box.clientHeight || 600);
    var dpr = window.devicePixelRatio || 1;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) {
      c.width = Math.round(w * dpr); c.height = Math.round(h * dpr);
      c.style.width = w + 'px'; c.style.height = h + 'px';
    }
    var g = c.getContext('2d'), scroll = ui.box.scrollTop, plotW = w - LABEL_W;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, h);
    g.font = FONT;
    g.textBaseline = 'alphabetic';
    var charW = ui.charW || (ui.charW = g.measureText('abcdefghijklmnopqrstuvwxyz_ABCDEFG0123456').width / 42);
    state.drawn = 0; state.boxes = 0; state.merged = 0;
    T.lanes.forEach(function (l, k) {
      var y = l.top - scroll;
      if (y > h || y + l.rows * ROW < AXIS) return;
      g.fillStyle = k % 2 ? '#f8fafc' : '#fff';
      g.fillRect(0, y, w, l.rows * ROW);
    });
    for (var r = 0; r < T.nrows; r++) {
      var y = rowY(r) - scroll;
      g.save();
      g.beginPath(); g.rect(LABEL_W, Math.max(y, AXIS), plotW, ROW); g.clip();
      /* rows scrolled out of sight are still counted, not drawn: cheap, and the count is exact */
      if (y + ROW >= AXIS && y <= h) state.drawn += drawRow(g, r, y, plotW, charW);
      else state.drawn += countRow(r);
      g.restore();
    }
    g.save(); g.beginPath(); g.rect(0, AXIS, w, h - AXIS); g.clip();
    drawSelection(g, plotW, scroll);
    g.fillStyle = 'rgba(255,255,255,0.94)';
    g.fillRect(0, AXIS, LABEL_W - 4, h);
    T.lanes.forEach(function (l) {
      var y = l.top - scroll;
      if (y > h || y + l.rows * ROW < AXIS) return;
      g.fillStyle = l.gpu ? '#166534' : '#334155';
      label(g, l.name, 0, Math.max(y, AXIS), LABEL_W - 4, charW);
      g.strokeStyle = '#e2e8f0';
      g.beginPath(); g.moveTo(0, y + l.rows * ROW + LANE_GAP / 2); g.lineTo(w, y + l.rows * ROW + LANE_GAP / 2); g.stroke();
    });
    g.restore();
    drawAxis(g, w, plotW);
    state.lastMs = performance.now() - t0;
    ui.range.textContent = 'showing ' + fmtNs(state.v0) + ' \u2013 ' + fmtNs(state.v1) + ' (' +
      fmtNs(state.v1 - state.v0) + ' of ' + fmtNs(T.span) + '); ' + state.drawn + ' of ' + T.n + ' ranges in view';
    c.setAttribute('data-v0', String(state.v0));
    c.setAttribute('data-v1', String(state.v1));
    c.setAttribute('data-drawn', String(state.drawn));
  }

  /* The ranges of row r in view, without drawing them. */
  function countRow(r) {
    var lo = T.rowFirst[r], hi = T.rowFirst[r + 1], i = firstAtLeast(T.endMax, lo, hi, state.v0);
    return firstAbove(T.start, i, hi, state.v1) - i;
  }

  var pending = false;
  function redraw() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(function () { pending = false; draw(); });
  }

  /* ---- moving: zoom around a fraction of the plot, pan by a fraction of the view ---- */

  function setView(v0, v1) {
    var span = Math.min(Math.max(v1 - v0, 10), T.span);
    v0 = Math.min(Math.max(v0, 0), T.span - span);
    state.v0 = v0; state.v1 = v0 + span;
  }

  function zoom(factor, f) {
    var span = state.v1 - state.v0, at = state.v0 + f * span;
    setView(at - f * span * factor, at + (1 - f) * span * factor);
  }

  function pan(f) {
    var d = (state.v1 - state.v0) * f;
    setView(state.v0 + d, state.v1 + d);
  }

  /* ---- picking: the range under a point, its args and links ---- */

  function pick(px, py) {
    var plotW = ui.box.clientWidth - LABEL_W, x = px - LABEL_W, y = py + ui.box.scrollTop;
    if (x < 0 || py < AXIS) return -1;
    for (var r = 0; r < T.nrows; r++) {
      var top = rowY(r);
      if (y < top || y >= top + ROW) continue;
      var scale = plotW / (state.v1 - state.v0), t = state.v0 + x / scale, slack = 2 / scale;
      var lo = T.rowFirst[r], hi = T.rowFirst[r + 1];
      var i = firstAbove(T.start, lo, hi, t + slack) - 1; /* the last starting at or before t */
      for (var k = i; k >= lo && k > i - 64; k--)
        if (T.start[k] + T.dur[k] >= t - slack) return k;
      return -1;
    }
    return -1;
  }

  function index(col) {
    var m = new Map(), v = T.src[col];
    for (var i = 0; i < T.n; i++) {
      if (!v[i]) continue;
      var key = T.lanes[T.rowLane[T.rowOf[i]]].group + ':' + v[i];
      var l = m.get(key);
      if (l) l.push(i); else m.set(key, [i]);
    }
    return m;
  }

  /* The ranges linked to i: same correlation id (launch <-> GPU work), and for an op or GPU work
   * the others of its External id (the op, its launches, their kernels), within one model. */
  function linksOf(i) {
    if (!T.byCorr) { T.byCorr = index('corr'); T.byExt = index('ext'); }
    var group = T.lanes[T.rowLane[T.rowOf[i]]].group, out = [];
    [['corr', T.byCorr], ['ext', T.byExt]].forEach(function (p) {
      var v = T.src[p[0]][i];
      if (!v) return;
      (p[1].get(group + ':' + v) || []).forEach(function (k) { if (k !== i && out.indexOf(k) < 0) out.push(k); });
    });
    return out.slice(0, 200);
  }

  function argsOf(i) {
    return T.src.args_json[T.src.args[i]] || {};
  }

  function select(i) {
    state.sel = i;
    state.links = i >= 0 ? linksOf(i) : [];
    var d = ui.details;
    while (d.firstChild) d.removeChild(d.firstChild);
    if (i < 0) { d.appendChild(make('p', 'color:#5f6b78', 'Click a range for its args and its linked ranges.')); redraw(); return; }
    var lane = T.lanes[T.rowLane[T.rowOf[i]]];
    d.appendChild(make('h3', 'margin:0 0 4px;font-size:14px;word-break:break-all', T.names[T.name[i]]));
    var rows = [['lane', lane.name], ['start', fmtNs(T.start[i])], ['duration', fmtNs(T.dur[i])],
                ['depth', String(T.rowDepth[T.rowOf[i]])]];
    if (T.src.corr[i]) rows.push(['correlation', String(T.src.corr[i])]);
    var args = argsOf(i);
    Object.keys(args).forEach(function (k) {
      var v = args[k];
      rows.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
    });
    var table = make('table', 'width:auto;margin-bottom:6px');
    table.id = 'trace-args';
    rows.forEach(function (p, n) {
      var tr = make('tr');
      var th = make('td', 'color:#5f6b78;text-align:left', p[0]), td = make('td', 'text-align:left;white-space:pre-wrap;word-break:break-all;font-family:ui-monospace,monospace;font-size:12px', p[1]);
      if (n >= 4) { tr.setAttribute('data-key', p[0]); td.setAttribute('data-v', p[1]); }
      tr.appendChild(th); tr.appendChild(td); table.appendChild(tr);
    });
    d.appendChild(table);
    if (state.links.length) {
      d.appendChild(make('div', 'color:#5f6b78', 'Linked (same correlation or External id):'));
      var ul = make('ul', 'margin:2px 0;padding-left:18px');
      ul.id = 'trace-links';
      state.links.forEach(function (k) {
        var li = make('li'), a = make('a', 'cursor:pointer;color:#2563eb', T.names[T.name[k]] + ' (' +
          T.lanes[T.rowLane[T.rowOf[k]]].name + ', ' + fmtNs(T.dur[k]) + ')');
        a.setAttribute('data-index', String(k));
        a.addEventListener('click', function () { focus(k); });
        li.appendChild(a); ul.appendChild(li);
      });
      d.appendChild(ul);
    }
    redraw();
  }

  /* Selects range i and brings it into view (zoomed so that it is a tenth of the view, or
   * kept as is when it already shows). */
  function focus(i) {
    var span = state.v1 - state.v0;
    if (T.start[i] < state.v0 || T.start[i] + T.dur[i] > state.v1) {
      span = Math.max(span, T.dur[i] * 10, 1000);
      setView(T.start[i] + T.dur[i] / 2 - span / 2, T.start[i] + T.dur[i] / 2 + span / 2);
    }
    var y = rowY(T.rowOf[i]);
    if (y < ui.box.scrollTop + AXIS || y > ui.box.scrollTop + ui.box.clientHeight - ROW)
      ui.box.scrollTop = Math.max(0, y - ui.box.clientHeight / 2);
    select(i);
  }

  /* ---- the DOM and its events ---- */

  function build(container) {
    var bar = make('div', 'margin-bottom:8px');
    var buttons = [['in', 'zoom in (W)', function () { zoom(0.5, 0.5); }],
                   ['out', 'zoom out (S)', function () { zoom(2, 0.5); }],
                   ['left', '\u2190 (A)', function () { pan(-0.2); }], ['right', '\u2192 (D)', function () { pan(0.2); }],
                   ['reset', 'reset', function () { setView(0, T.span); }]];
    buttons.forEach(function (b) {
      var e = make('button', 'font:inherit;padding:3px 10px;margin-right:4px', b[1]);
      e.id = 'trace-' + b[0];
      e.addEventListener('click', function () { b[2](); redraw(); });
      bar.appendChild(e);
    });
    var range = make('span', 'color:#5f6b78;margin-left:8px');
    range.id = 'trace-range';
    bar.appendChild(range);
    var box = make('div', 'position:relative;height:70vh;overflow-y:auto;overflow-x:hidden;background:#fff;border:1px solid #d9dee4;border-radius:6px');
    var canvas = make('canvas', 'position:sticky;top:0;display:block;cursor:grab');
    canvas.id = 'trace-canvas';
    canvas.tabIndex = 0;
    var spacer = make('div');
    box.appendChild(canvas); box.appendChild(spacer);
    var note = make('p', 'color:#5f6b78');
    note.id = 'trace-note';
    var details = make('div', 'background:#fff;border:1px solid #d9dee4;border-radius:6px;padding:8px 12px;margin-top:8px');
    details.id = 'trace-details';
    [bar, box, note, details].forEach(function (e) { container.appendChild(e); });
    ui = { canvas: canvas, box: box, spacer: spacer, range: range, note: note, details: details, charW: 0 };
    listen();
  }

  var drag = null;

  /* The canvas' own events; the window's and the document's are added once (listenOnce). */
  function listen() {
    var c = ui.canvas;
    function frac(e) { return Math.min(1, Math.max(0, (at(e).x - LABEL_W) / (c.clientWidth - LABEL_W))); }
    c.addEventListener('wheel', function (e) {
      if (e.ctrlKey || e.metaKey) { e.preventDefault(); zoom(e.deltaY < 0 ? 0.8 : 1.25, frac(e)); redraw(); }
      else if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        e.preventDefault(); pan((e.shiftKey ? e.deltaY : e.deltaX) / c.clientWidth); redraw();
      }
    }, { passive: false });
    ui.box.addEventListener('scroll', redraw);
    c.addEventListener('mousedown', function (e) { drag = { x: e.clientX, v0: state.v0, v1: state.v1, moved: false }; });
  }

  function at(e) { var r = ui.canvas.getBoundingClientRect(); return { x: e.clientX - r.left, y: e.clientY - r.top }; }

  var listening = false;
  function listenOnce() {
    if (listening) return;
    listening = true;
    window.addEventListener('mouseup', function (e) {
      if (drag && !drag.moved && T) { var p = at(e); select(pick(p.x, p.y)); }
      drag = null;
    });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var dx = e.clientX - drag.x;
      if (Math.abs(dx) > 3) drag.moved = true;
      if (!drag.moved) return;
      var dt = -dx / (ui.canvas.clientWidth - LABEL_W) * (drag.v1 - drag.v0);
      setView(drag.v0 + dt, drag.v1 + dt);
      redraw();
    });
    document.addEventListener('keydown', function (e) {
      if (!T || !ui.box.offsetParent || e.ctrlKey || e.metaKey || e.altKey) return;
      var tag = (document.activeElement && document.activeElement.tagName) || '';
      if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
      var k = e.key.toLowerCase();
      if (k === 'w') zoom(0.8, 0.5); else if (k === 's') zoom(1.25, 0.5);
      else if (k === 'a') pan(-0.1); else if (k === 'd') pan(0.1); else return;
      e.preventDefault();
      redraw();
    });
    window.addEventListener('resize', redraw);
  }

  /* Draws trace in container; false when it is the one shown already (kept as it is). */
  function render(container, trace) {
    if (T && T.src === trace && ui && container.contains(ui.box)) { draw(); return false; }
    if (!ui || !container.contains(ui.box)) {
      while (container.firstChild) container.removeChild(container.firstChild);
      build(container);
    }
    listenOnce();
    T = parse(trace);
    T.src = trace;
    state.sel = -1; state.links = [];
    setView(0, T.span);
    ui.spacer.style.height = Math.max(0, T.height - (ui.box.clientHeight || 600)) + 'px';
    var notes = ['Every range of the input: ' + T.n + ' on ' + T.lanes.length + ' lanes.'];
    if (trace.cut_us !== undefined)
      notes = ['The first ' + T.n + ' of ' + trace.ranges_total + ' ranges by start: the view ends where ' +
               'ranges started past the Trace view\u2019s bound (' + fmtNs((trace.cut_us - trace.t0_us) * 1e3) +
               ' from the start); the rest of the input is left out.'];
    if (trace.args_left_out) notes.push(trace.args_left_out + ' ranges carry no args here: their args text passed the view\u2019s bound.');
    if (trace.partial) notes.push('Memory ran out while collecting: the view is partial.');
    notes.push('W/S zoom, A/D pan, Ctrl+wheel zooms at the pointer, drag to pan, click a range for its args.');
    ui.note.textContent = notes.join(' ');
    select(-1);
    draw();
    return true;
  }

  /* tprof serve's view: the run's ranges asked once (api/trace, h.liveTrace), drawn when they
   * arrive unless another run was picked meanwhile; a button asks again for the windows written
   * since. */
  function renderLive(box, h, asked) {
    if (!asked.trace) {
      ui = null;
      h.clear(box).appendChild(h.empty(asked.error ? 'No Trace view: ' + asked.error :
        'Reading the run\u2019s ranges (api/trace)\u2026'));
      if (!asked.error) asked.promise.then(function () { if (h.liveTrace() === asked) renderLive(box, h, asked); });
      return;
    }
    if (!render(box, asked.trace)) return;
    var again = make('button', 'font:inherit;padding:1px 8px;margin-left:6px', 'read again');
    again.id = 'trace-reload';
    again.addEventListener('click', function () { renderLive(box, h, h.liveTrace(true)); });
    ui.note.appendChild(document.createTextNode(' Read from the run at ' + asked.at.toLocaleTimeString() +
                                                 ' (windows written since are not shown).'));
    ui.note.appendChild(again);
  }

  /* The view, as report.js calls it (window.tprofViews): every range of side A's inputs, in
   * `tprof report`'s page, or fetched from tprof serve (h.liveTrace). With a comparison and
   * side B shown, d is B's (its analysis is analysis_b): the view says it shows A's. */
  window.tprofViews = window.tprofViews || {};
  window.tprofViews.trace = function (d, h) {
    var box = h.$('trace-view');
    var asked = !d.trace && h.liveTrace ? h.liveTrace() : null;
    if (!(d.trace || asked) || (d.analysis_b && d.analysis === d.analysis_b)) {
      if (ui) ui = null;
      h.clear(box).appendChild(h.empty(d.trace || asked ? 'The Trace view shows side A: pick A above.' :
        'No Trace view here: tprof report and tprof serve show one (docs/REPORT.md, "Trace view").'));
      return;
    }
    if (d.trace) render(box, d.trace); else renderLive(box, h, asked);
  };

  window.tprofTrace = {
    render: render,
    /* for the tests and the benchmark: what the last frame drew, and the view moved at once */
    stats: function () {
      return { v0: state.v0, v1: state.v1, span: T ? T.span : 0, ranges: T ? T.n : 0, drawn: state.drawn,
               boxes: state.boxes, merged: state.merged, ms: state.lastMs, selected: state.sel,
               links: state.links.slice() };
    },
    zoom: function (factor, f) { zoom(factor, f); draw(); return state.lastMs; },
    pan: function (f) { pan(f); draw(); return state.lastMs; },
    reset: function () { setView(0, T.span); draw(); },
    focus: function (i) { focus(i); draw(); },
    select: function (i) { select(i); draw(); },
    boxOf: function (i) {
      var b = boxOf(i, ui.box.clientWidth - LABEL_W, ui.box.scrollTop);
      return { x: (b.x0 + b.x1) / 2, y: b.y + ROW / 2 };
    }
  };
})();
