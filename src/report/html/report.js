/* report.js - tprof's report page: renders "the report data" (docs/REPORT.md).
 *
 * The data is embedded in the page (<script id="tprof-data">, the offline report) or, without
 * it, fetched from tprof serve ("api/runs", "api/data?run=NAME", polled every second; the Trace
 * view's "api/trace?run=NAME", asked once per run). Every
 * figure shown is a number of the data as tprof analyze --json gives it: this script only
 * formats, sorts, filters and draws; it computes no figure. Each shown figure carries its exact
 * value in a data-v attribute (what the browser tests compare with tprof analyze --json). */
(function () {
  'use strict';

  var data = null;        /* the report data shown */
  var side = 'a';         /* with a comparison: whose views are shown, A's or B's */
  var view = 'overview';  /* the active view */
  var rendered = {};      /* views rendered for the current data */
  var charts = {};        /* Chart.js instances by canvas id */
  var palette = ['#2563eb', '#16a34a', '#f59e0b', '#dc2626', '#7c3aed', '#0891b2', '#db2777',
                 '#65a30d', '#ea580c', '#4f46e5', '#0d9488', '#9ca3af'];

  /* ---- formatting: the only arithmetic here is unit conversion ---- */

  function fmtUs(us) {
    if (us === null || us === undefined) return 'n/a';
    var a = Math.abs(us);
    if (a < 1000) return us.toFixed(1) + ' \u00b5s';
    if (a < 1e6) return (us / 1e3).toFixed(2) + ' ms';
    return (us / 1e6).toFixed(2) + ' s';
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return 'n/a';
    var units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'], i = 0, v = b;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(2) : String(v)) + ' ' + units[i];
  }
  function fmtPct(p) { return p === null || p === undefined ? 'n/a' : p.toFixed(1) + ' %'; }
  function fmtNum(n) {
    if (n === null || n === undefined) return 'n/a';
    if (Math.abs(n) >= 1e12) return (n / 1e12).toFixed(2) + ' T';
    if (Math.abs(n) >= 1e9) return (n / 1e9).toFixed(2) + ' G';
    if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(2) + ' M';
    return String(n);
  }
  var formats = { us: fmtUs, bytes: fmtBytes, pct: fmtPct, num: fmtNum,
                  text: function (s) { return s === null || s === undefined ? '' : String(s); },
                  shapes: function (s) { return s ? s : '(none recorded)'; },
                  /* an op's input dtypes (Kineto's Input type): the tensors' ones, in order */
                  dtypes: function (t) { return t ? t.filter(Boolean).join(', ') : ''; } };

  /* ---- DOM helpers ---- */

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === 'text') e.textContent = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function empty(text) { return el('p', { 'class': 'empty', text: text }); }

  /* A headline figure: its label, its formatted value, its exact value in data-v. */
  function card(id, label, value, format) {
    var v = el('div', { 'class': 'value', id: id, text: formats[format](value) });
    v.setAttribute('data-v', value === null || value === undefined ? '' : String(value));
    return el('div', { 'class': 'card' }, [el('div', { 'class': 'label', text: label }), v]);
  }

  /* A sortable (click a header), optionally filterable table of rows (objects). columns:
   * [{key, label, format}]; the first column is the name the filter matches. */
  function table(container, id, columns, rows, opts) {
    opts = opts || {};
    clear(container);
    if (!rows || !rows.length) { container.appendChild(empty(opts.empty || 'none')); return; }
    var sortKey = null, sortDir = -1, filter = '';
    var tbody = el('tbody');
    var heads = columns.map(function (c) {
      var th = el('th', { text: c.label, 'data-key': c.key });
      th.addEventListener('click', function () {
        sortDir = sortKey === c.key ? -sortDir : (c.format === 'text' ? 1 : -1);
        sortKey = c.key;
        heads.forEach(function (h) { h.className = ''; });
        th.className = sortDir > 0 ? 'sorted-asc' : 'sorted-desc';
        fill();
      });
      return th;
    });
    function fill() {
      var shown = rows.filter(function (r) {
        return !filter || String(r[columns[0].key]).toLowerCase().indexOf(filter) >= 0;
      });
      if (sortKey) {
        shown = shown.slice().sort(function (a, b) {
          var x = a[sortKey], y = b[sortKey];
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * sortDir;
        });
      }
      clear(tbody);
      shown.forEach(function (r) {
        tbody.appendChild(el('tr', opts.rowClass ? { 'class': opts.rowClass(r) } : {}, columns.map(function (c) {
          var v = r[c.key];
          var td = el('td', c.cls ? { 'class': c.cls, text: formats[c.format || 'text'](v) }
                                   : { text: formats[c.format || 'text'](v) });
          td.setAttribute('data-v', v === null || v === undefined ? '' : String(v));
          return td;
        })));
      });
    }
    if (opts.filter) {
      var input = el('input', { 'class': 'filter', type: 'search', id: id + '-filter',
                                placeholder: 'filter by name' });
      input.addEventListener('input', function () { filter = input.value.toLowerCase(); fill(); });
      container.appendChild(input);
    }
    container.appendChild(el('div', { 'class': 'table-box' }, [
      el('table', { id: id }, [el('thead', {}, [el('tr', {}, heads)]), tbody])]));
    fill();
  }

  function chart(id, config) {
    if (charts[id]) charts[id].destroy();
    config.options = Object.assign({ animation: false, responsive: true,
                                     maintainAspectRatio: false }, config.options || {});
    charts[id] = new Chart($(id), config);
    return charts[id];
  }

  /* ---- the views ---- */

  function topOp(a) { return a.top_cpu_ops && a.top_cpu_ops.length ? a.top_cpu_ops[0] : null; }
  function memoryPeak(a) {
    var best = null;
    (a.memory || []).forEach(function (m) { if (best === null || m.peak_bytes > best) best = m.peak_bytes; });
    return best;
  }

  function overview(d) {
    var a = d.analysis, s = a.steps, op = topOp(a);
    var figs = clear($('figures'));
    figs.appendChild(card('fig-steps', 'steps', s.count, 'num'));
    figs.appendChild(card('fig-mean', 'mean step', s.mean_us, 'us'));
    figs.appendChild(card('fig-p50', 'p50 step', s.p50_us, 'us'));
    figs.appendChild(card('fig-p95', 'p95 step', s.p95_us, 'us'));
    figs.appendChild(card('fig-gpu-util', 'GPU utilization', a.gpu.utilization_pct, 'pct'));
    figs.appendChild(card('fig-mem-peak', 'memory peak', memoryPeak(a), 'bytes'));
    figs.appendChild(card('fig-flops', 'FLOP rate (FLOP/s)', a.flops.per_second, 'num'));
    figs.appendChild(card('fig-mfu', 'MFU (torch.profiler FLOPs)', a.mfu.pct, 'pct'));
    figs.appendChild(card('fig-mfu-fcm', 'MFU (FlopCounterMode FLOPs: fwd + bwd)',
                          a.flops_fcm.mfu_pct, 'pct'));
    figs.appendChild(card('fig-dataloader', 'dataloader share', a.dataloader_pct, 'pct'));
    figs.appendChild(card('fig-top-op', 'top op (self)', op ? op.name : null, 'text'));
    figs.appendChild(card('fig-top-op-self', 'its self time', op ? op.self_us : null, 'us'));

    var steps = s.list || [];
    /* a bounded page (docs/REPORT.md, "Size and time") keeps every k-th step of a long run */
    $('steps-note').textContent = steps.length < s.count ?
      'A summary: one step in ' + Math.ceil(s.count / steps.length) + ', ' + steps.length + ' of ' +
      s.count + ' (the report keeps at most ' + d.list_max + ').' : '';
    var names = a.stages.map(function (st) { return st.stage; });
    var datasets = names.map(function (n, i) {
      return { label: n, backgroundColor: palette[i % palette.length],
               data: steps.map(function (x) { return x.stages[n] / 1e3; }) };
    });
    datasets.push({ label: 'other', backgroundColor: '#cbd5e1',
                    data: steps.map(function (x) { return x.other_us / 1e3; }) });
    chart('chart-steps', {
      type: 'bar',
      data: { labels: steps.map(function (x) { return x.number; }), datasets: datasets },
      options: { scales: { x: { stacked: true, title: { display: true, text: 'step' } },
                           y: { stacked: true, title: { display: true, text: 'ms' } } },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   return c.dataset.label + ': ' + fmtUs(c.raw * 1e3); } } } } }
    });
    var rows = a.stages.concat([a.other]);
    table($('stages-table'), 'stages', [
      { key: 'stage', label: 'stage' }, { key: 'count', label: 'count', format: 'num' },
      { key: 'total_us', label: 'total', format: 'us' }, { key: 'mean_us', label: 'mean', format: 'us' },
      { key: 'p50_us', label: 'p50', format: 'us' }, { key: 'p95_us', label: 'p95', format: 'us' },
      { key: 'max_us', label: 'max', format: 'us' }, { key: 'pct', label: 'share of steps', format: 'pct' }
    ], rows);

    var recos = clear($('recommendations'));
    if (!a.recommendations.length) recos.appendChild(empty('none: no rule fired'));
    a.recommendations.forEach(function (r) {
      recos.appendChild(el('div', { 'class': 'reco', 'data-id': r.id }, [
        el('span', { 'class': 'id', text: r.id + ' ' }),
        el('span', { 'class': 'saving', text: '(could save up to ' + fmtUs(r.saving_us) + ' of step time)' }),
        el('div', { text: r.message })]));
    });
    var warns = clear($('warnings'));
    if (!a.warnings.length) warns.appendChild(empty('none'));
    a.warnings.forEach(function (w) { warns.appendChild(el('div', { 'class': 'warn', text: w })); });
  }

  function operators(d) {
    var a = d.analysis;
    document.querySelectorAll('.top-rows').forEach(function (n) { n.textContent = d.top_rows; });
    /* grouped by input shape (top_cpu_ops_by_shape, present when the input recorded shapes):
     * the same table with the shapes after the name, and the first call's dtypes last */
    var byShape = a.top_cpu_ops_by_shape || [], toggle = $('ops-by-shape');
    $('ops-shape-toggle').hidden = !byShape.length;
    if (!byShape.length) toggle.checked = false;
    function opsTable() {
      var shaped = toggle.checked;
      var columns = [{ key: 'name', label: 'op' }];
      if (shaped) columns.push({ key: 'input_shapes', label: 'input shapes', format: 'shapes', cls: 'shapes' });
      table($('ops-table'), shaped ? 'ops-shape' : 'ops', columns.concat([
        { key: 'calls', label: 'calls', format: 'num' },
        { key: 'self_us', label: 'self', format: 'us' }, { key: 'self_pct', label: 'self %', format: 'pct' },
        { key: 'total_us', label: 'total', format: 'us' }, { key: 'mean_us', label: 'mean', format: 'us' },
        { key: 'max_us', label: 'max', format: 'us' },
        { key: 'flops', label: 'FLOPs (torch.profiler)', format: 'num' },
        { key: 'flops_fcm', label: 'FLOPs fwd + bwd (FlopCounterMode)', format: 'num' },
        { key: 'gpu_us', label: 'GPU time launched', format: 'us' },
        { key: 'kernels', label: 'kernels', format: 'num' }
      ]).concat(shaped ? [{ key: 'input_types', label: 'input dtypes', format: 'dtypes', cls: 'shapes' }] : []),
      shaped ? byShape : a.top_cpu_ops, { filter: true, empty: 'no ops in this input' });
    }
    toggle.onchange = opsTable; /* one handler however often the view is rendered (tprof serve) */
    opsTable();
    table($('ops-gpu-table'), 'ops-gpu', [
      { key: 'name', label: 'op' }, { key: 'gpu_us', label: 'GPU time', format: 'us' },
      { key: 'pct', label: 'share of GPU work', format: 'pct' }, { key: 'kernels', label: 'kernels', format: 'num' }
    ], a.top_ops_by_gpu_time, { empty: 'no op launched GPU work' });
  }

  function kernels(d) {
    var a = d.analysis, g = a.gpu;
    var figs = clear($('gpu-figures'));
    figs.appendChild(card('fig-gpu-util-2', 'GPU utilization', g.utilization_pct, 'pct'));
    figs.appendChild(card('fig-gpu-busy', 'GPU busy', g.busy_us, 'us'));
    figs.appendChild(card('fig-gpu-devices', 'devices', g.devices, 'num'));
    figs.appendChild(card('fig-gpu-kernels', 'kernels run', g.kernel_count, 'num'));
    figs.appendChild(card('fig-gpu-work', 'GPU work', g.work_us, 'us'));
    table($('devices-table'), 'devices', [
      { key: 'device', label: 'device' }, { key: 'busy_us', label: 'busy', format: 'us' },
      { key: 'idle_us', label: 'idle', format: 'us' }, { key: 'window_us', label: 'window', format: 'us' },
      { key: 'utilization_pct', label: 'utilization', format: 'pct' }
    ], g.per_device, { empty: 'no GPU work in this input' });
    table($('idle-table'), 'idle', [
      { key: 'device', label: 'device' }, { key: 'idle_us', label: 'idle', format: 'us' },
      { key: 'host_us', label: 'waiting for the host', format: 'us' },
      { key: 'sync_us', label: 'after a sync', format: 'us' },
      { key: 'launch_us', label: 'launch gaps', format: 'us' }, { key: 'other_us', label: 'other', format: 'us' }
    ], g.idle, { empty: 'no GPU work in this input' });
    table($('kernels-table'), 'kernels', [
      { key: 'name', label: 'kernel' }, { key: 'calls', label: 'calls', format: 'num' },
      { key: 'total_us', label: 'total', format: 'us' }, { key: 'pct', label: 'share', format: 'pct' },
      { key: 'mean_us', label: 'mean', format: 'us' }, { key: 'min_us', label: 'min', format: 'us' },
      { key: 'max_us', label: 'max', format: 'us' }
    ], a.top_gpu_kernels, { filter: true, empty: 'no kernels in this input' });
  }

  function deviceName(type, id) { return (type === 0 ? 'CPU' : type === 1 ? 'GPU' : 'device type ' + type) + ' ' + id; }

  function memory(d) {
    var a = d.analysis;
    table($('memory-peaks'), 'memory', [
      { key: 'device', label: 'device' }, { key: 'peak_bytes', label: 'peak', format: 'bytes' },
      { key: 'peak_ts_us', label: 'at (trace time)', format: 'us' },
      { key: 'capacity_bytes', label: 'capacity', format: 'bytes' },
      { key: 'capacity_pct', label: 'of capacity', format: 'pct' }
    ], a.memory.map(function (m) { return Object.assign({ device: deviceName(m.device_type, m.device_id) }, m); }),
    { empty: 'no [memory] events in this input (record with profile_memory)' });
    var curves = d.series ? d.series.memory : [];
    var t0 = curves.length && curves[0].points.length ? curves[0].points[0][0] : 0;
    curves.forEach(function (c) { if (c.points.length && c.points[0][0] < t0) t0 = c.points[0][0]; });
    chart('chart-memory', {
      type: 'line',
      data: { datasets: curves.map(function (c, i) {
        return { label: deviceName(c.device_type, c.device_id), borderColor: palette[i % palette.length],
                 pointRadius: 0, stepped: true, borderWidth: 1.5,
                 data: c.points.map(function (p) { return { x: (p[0] - t0) / 1e3, y: p[1] / 1048576 }; }) };
      }) },
      options: { parsing: true, scales: { x: { type: 'linear', title: { display: true, text: 'ms from the first event' } },
                                           y: { title: { display: true, text: 'MiB allocated' } } } }
    });
    table($('alloc-table'), 'allocs', [
      { key: 'name', label: 'op' }, { key: 'alloc_bytes', label: 'allocated', format: 'bytes' },
      { key: 'allocs', label: 'allocations', format: 'num' }
    ], a.top_ops_by_allocation || [], { filter: true, empty: 'no allocation inside an op (record with profile_memory)' });
    var more = d.series && d.series.memory_total > curves.length ?
      ' The first ' + curves.length + ' of ' + d.series.memory_total + ' devices are drawn.' : '';
    $('memory-note').textContent = curves.length ?
      'Each device\'s curve holds at most ' + 1500 + ' points: the highest of each stretch of events.' + more : '';
  }

  /* ---- the timeline: a canvas, zoomed with the wheel or the buttons, panned by dragging ---- */

  var tl = { v0: 0, v1: 1, lo: 0, hi: 1, lanes: [], items: [], rowOf: [0], rows: 1, depth: [1] };

  function timelineSetup(d) {
    var s = d.series;
    tl.items = [];
    tl.lanes = ['steps'];
    if (!s) { tl.lo = 0; tl.hi = 1; tl.rowOf = [0]; tl.rows = 1; tl.depth = [1]; return; }
    tl.lanes = ['steps'].concat(s.lanes);
    s.steps.forEach(function (r) { tl.items.push({ lane: 0, t: r[1], d: r[2], name: s.names[r[3]], kind: 'step' }); });
    s.ranges.forEach(function (r) { tl.items.push({ lane: r[0] + 1, t: r[1], d: r[2], name: s.names[r[3]], kind: r[4] }); });
    /* Nested ranges of a lane stack below their parent: each lane gets as many rows as its
     * deepest nesting (a layout, not a figure). */
    tl.items.sort(function (a, b) { return a.lane - b.lane || a.t - b.t || b.d - a.d; });
    var depth = tl.lanes.map(function () { return 1; }), open = [], lane = -1;
    tl.items.forEach(function (x) {
      if (x.lane !== lane) { open = []; lane = x.lane; }
      while (open.length && open[open.length - 1] <= x.t) open.pop();
      x.row = open.length;
      open.push(x.t + x.d);
      depth[x.lane] = Math.max(depth[x.lane], open.length);
    });
    tl.rowOf = [];
    var row = 0;
    depth.forEach(function (n, i) { tl.rowOf[i] = row; row += Math.min(n, 12); });
    tl.rows = row;
    tl.depth = depth;
    /* times from the first range's start: absolute microseconds (~1e15) would leave a double
     * too few digits to zoom into */
    var lo = Infinity, hi = -Infinity;
    tl.items.forEach(function (x) { lo = Math.min(lo, x.t); hi = Math.max(hi, x.t + x.d); });
    if (!tl.items.length) { lo = 0; hi = 1; }
    tl.items.forEach(function (x) { x.t -= lo; });
    tl.lo = 0; tl.hi = hi > lo ? hi - lo : 1;
    tl.v0 = tl.lo; tl.v1 = tl.hi;
    var stepsTotal = s.steps_total === undefined ? s.steps.length : s.steps_total;
    var stepsText = stepsTotal > s.steps.length ?
      'the ' + s.steps.length + ' longest of ' + stepsTotal + ' steps' : 'every step';
    $('timeline-note').textContent = s.ranges_total > s.ranges.length ?
      'A summary: ' + stepsText + ', and the ' + s.ranges.length + ' longest of ' + s.ranges_total + ' ranges.' :
      (stepsTotal > s.steps.length ? 'A summary: ' + stepsText + ', and every range of the input (' :
       'Every step and every range of the input (') + s.ranges_total + ').';
  }

  function timelineDraw() {
    var c = $('timeline'), lh = 18, top = 4, labelW = 220;
    var w = c.clientWidth || 1000;
    c.width = w;
    c.height = top + tl.rows * lh + 20;
    var g = c.getContext('2d');
    g.clearRect(0, 0, c.width, c.height);
    g.font = '11px system-ui, sans-serif';
    var span = tl.v1 - tl.v0, plotW = w - labelW;
    tl.lanes.forEach(function (name, i) {
      var y = top + tl.rowOf[i] * lh;
      g.fillStyle = i % 2 ? '#f1f5f9' : '#fff';
      g.fillRect(0, y, w, Math.min(tl.depth[i], 12) * lh);
      g.fillStyle = '#334155';
      g.fillText(name.length > 34 ? name.slice(0, 33) + '\u2026' : name, 4, y + 13);
    });
    tl.items.forEach(function (x) {
      if (x.t + x.d < tl.v0 || x.t > tl.v1 || x.row >= 12) return;
      var x0 = labelW + Math.max(0, (x.t - tl.v0) / span * plotW);
      var x1 = labelW + Math.min(plotW, (x.t + x.d - tl.v0) / span * plotW);
      var y = top + (tl.rowOf[x.lane] + x.row) * lh + 2;
      g.fillStyle = x.kind === 'step' ? '#2563eb' : x.kind === 'gpu' ? '#16a34a' : '#f59e0b';
      g.fillRect(x0, y, Math.max(1, x1 - x0), lh - 4);
      if (x1 - x0 > 50) {
        g.save();
        g.beginPath(); g.rect(x0, y, x1 - x0, lh - 4); g.clip();
        g.fillStyle = '#fff';
        g.fillText(x.name, x0 + 3, y + 11);
        g.restore();
      }
    });
    g.fillStyle = '#64748b';
    g.fillText(fmtUs(0), labelW, c.height - 4);
    var end = fmtUs(span);
    g.fillText(end, w - g.measureText(end).width - 4, c.height - 4);
    c.setAttribute('data-v0', String(tl.v0));
    c.setAttribute('data-v1', String(tl.v1));
    $('tl-range').textContent = 'showing ' + fmtUs(span) + ' of ' + fmtUs(tl.hi - tl.lo);
  }

  /* Zooms by factor around the time at fraction f of the plot, kept inside the trace. */
  function timelineZoom(factor, f) {
    var span = tl.v1 - tl.v0, at = tl.v0 + f * span, ns = Math.max(span * factor, 0.001);
    ns = Math.min(ns, tl.hi - tl.lo);
    tl.v0 = Math.max(tl.lo, at - f * ns);
    tl.v1 = Math.min(tl.hi, tl.v0 + ns);
    tl.v0 = tl.v1 - ns;
    timelineDraw();
  }

  function timelineEvents() {
    var c = $('timeline'), drag = null;
    function frac(e) {
      var r = c.getBoundingClientRect(), labelW = 220;
      return Math.min(1, Math.max(0, (e.clientX - r.left - labelW) / (r.width - labelW)));
    }
    c.addEventListener('wheel', function (e) { e.preventDefault(); timelineZoom(e.deltaY < 0 ? 0.8 : 1.25, frac(e)); });
    c.addEventListener('mousedown', function (e) { drag = { x: e.clientX, v0: tl.v0, v1: tl.v1 }; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      var r = c.getBoundingClientRect(), dt = (e.clientX - drag.x) / (r.width - 220) * (drag.v1 - drag.v0);
      dt = Math.max(tl.lo - drag.v0, Math.min(tl.hi - drag.v1, -dt));
      tl.v0 = drag.v0 + dt; tl.v1 = drag.v1 + dt;
      timelineDraw();
    });
    $('tl-in').addEventListener('click', function () { timelineZoom(0.5, 0.5); });
    $('tl-out').addEventListener('click', function () { timelineZoom(2, 0.5); });
    $('tl-reset').addEventListener('click', function () { tl.v0 = tl.lo; tl.v1 = tl.hi; timelineDraw(); });
  }

  function timeline(d) { timelineSetup(d); timelineDraw(); }

  function ranks(d) {
    var box = clear($('ranks')), r = d.analysis.ranks;
    if (!r) {
      box.appendChild(empty('One rank (or ranks analysed together): no per-rank figures in this input.'));
      return;
    }
    var strag = r.straggler ? r.straggler.rank : null;
    box.appendChild(el('div', { 'class': 'cards' }, [card('fig-ranks', 'ranks', r.count, 'num'),
      card('fig-straggler', 'straggler rank', strag, 'text')]));
    if (r.straggler) box.appendChild(el('p', { 'class': 'straggler-note', id: 'straggler-message', text: r.straggler.message }));
    var stageNames = {};
    r.per_rank.forEach(function (p) { Object.keys(p.stages_ns || {}).forEach(function (k) { stageNames[k] = 1; }); });
    rankCharts(box, r, Object.keys(stageNames), strag);
    box.appendChild(el('h2', { text: 'Per rank' }));
    var cols = [{ key: 'rank', label: 'rank' }, { key: 'steps', label: 'steps', format: 'num' },
                { key: 'step_mean_us', label: 'mean step', format: 'us' },
                { key: 'step_p95_us', label: 'p95 step', format: 'us' },
                { key: 'compute_us', label: 'compute', format: 'us' },
                { key: 'communication_us', label: 'communication', format: 'us' },
                { key: 'idle_us', label: 'idle', format: 'us' },
                { key: 'collective_wait_us', label: 'collective wait', format: 'us' }];
    Object.keys(stageNames).forEach(function (k) { cols.push({ key: 'stage:' + k, label: k, format: 'us' }); });
    /* the key's times are nanoseconds: shown in the page's microsecond formatting */
    var rows = r.per_rank.map(function (p) {
      var row = { rank: p.rank, steps: p.steps, step_mean_us: p.step_mean_ns / 1e3,
                  step_p95_us: p.step_p95_ns / 1e3, compute_us: p.compute_ns / 1e3,
                  communication_us: p.communication_ns / 1e3, idle_us: p.idle_ns / 1e3,
                  collective_wait_us: p.collective_wait_ns === undefined ? null : p.collective_wait_ns / 1e3 };
      Object.keys(stageNames).forEach(function (k) {
        row['stage:' + k] = p.stages_ns && k in p.stages_ns ? p.stages_ns[k] / 1e3 : null; });
      return row;
    });
    var cut = r.per_rank_cut;
    if (cut) {
      /* a bounded page (docs/REPORT.md, "Size and time"): the fastest and slowest ranks, and all ranks'
       * mean steps summed up */
      box.appendChild(el('p', { 'class': 'note', id: 'ranks-note', text:
        'The ' + cut.fastest + ' ranks of shortest and ' + cut.slowest + ' of longest mean step, of ' +
        r.count + ' ranks. Mean step over the ' + cut.with_steps + ' ranks with steps: from ' +
        fmtUs(cut.step_mean_min_ns === null ? null : cut.step_mean_min_ns / 1e3) + ' to ' +
        fmtUs(cut.step_mean_max_ns === null ? null : cut.step_mean_max_ns / 1e3) + ', median ' +
        fmtUs(cut.step_mean_median_ns === null ? null : cut.step_mean_median_ns / 1e3) + '.' }));
    }
    var tbox = el('div');
    box.appendChild(tbox);
    table(tbox, 'ranks-table', cols, rows, { rowClass: function (x) { return x.rank === strag ? 'straggler' : ''; } });
    if (r.step_spread && r.step_spread.length) {
      box.appendChild(el('h2', { text: 'Step time spread across ranks' }));
      if (r.step_spread.length >= d.list_max)
        box.appendChild(el('p', { 'class': 'note', text: 'At most ' + d.list_max +
          ' steps: those whose time differs most across ranks.' }));
      var sbox = el('div');
      box.appendChild(sbox);
      table(sbox, 'spread-table', [{ key: 'step', label: 'step' }, { key: 'min_us', label: 'fastest rank', format: 'us' },
        { key: 'max_us', label: 'slowest rank', format: 'us' }, { key: 'slowest_rank', label: 'slowest' }],
      r.step_spread.map(function (s) { return { step: s.step, min_us: s.min_ns / 1e3, max_us: s.max_ns / 1e3,
                                                slowest_rank: s.slowest_rank }; }));
    }
  }

  /* The ranks side by side: each rank's step as a bar stacked by stage (stages_per_step_ns, whose
   * sum is its mean step), and its waiting at collectives (collective_wait_ns); the straggler's
   * bars are outlined and its label says so. */
  function rankCharts(box, r, stageNames, strag) {
    var labels = r.per_rank.map(function (p) { return 'rank ' + p.rank + (p.rank === strag ? ' (straggler)' : ''); });
    var edge = function (color) {
      return { backgroundColor: color, borderWidth: r.per_rank.map(function (p) { return p.rank === strag ? 3 : 0; }),
               borderColor: '#dc2626' };
    };
    box.appendChild(el('h2', { text: 'Step time per rank, by stage' }));
    box.appendChild(el('div', { 'class': 'chart' }, [el('canvas', { id: 'chart-ranks' })]));
    chart('chart-ranks', {
      type: 'bar',
      data: { labels: labels, datasets: stageNames.map(function (n, i) {
        return Object.assign({ label: n, data: r.per_rank.map(function (p) {
          var v = (p.stages_per_step_ns || {})[n];
          return v === null || v === undefined ? null : v / 1e6; }) },
          edge(n === 'other' ? '#cbd5e1' : palette[i % palette.length]));
      }) },
      options: { scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: 'ms per step' } } },
                 plugins: { tooltip: { callbacks: { label: function (c) {
                   return c.dataset.label + ': ' + fmtUs(c.raw * 1e3); } } } } }
    });
    box.appendChild(el('h2', { text: 'Waiting at collectives per rank' }));
    box.appendChild(el('p', { 'class': 'note', text: 'At each collective matched on every rank, the time from this ' +
      'rank\'s arrival to the last rank\'s, summed (docs/DISTRIBUTED.md). ' +
      (r.straggler ? '' : 'No straggler: no rank causes most of the waiting, or it is under 2% of step time.') }));
    box.appendChild(el('div', { 'class': 'chart small' }, [el('canvas', { id: 'chart-rank-wait' })]));
    chart('chart-rank-wait', {
      type: 'bar',
      data: { labels: labels, datasets: [Object.assign({ label: 'collective wait', data: r.per_rank.map(function (p) {
        return p.collective_wait_ns === undefined ? null : p.collective_wait_ns / 1e6; }) }, edge('#0891b2'))] },
      options: { scales: { y: { title: { display: true, text: 'ms' } } },
                 plugins: { tooltip: { callbacks: { label: function (c) { return fmtUs(c.raw * 1e3); } } } } }
    });
  }

  /* The comparison (`tprof compare --json`): each table's regressions first (largest increase
   * of B over A at the top, improvements last), rows coloured by the change's sign. */
  function compare(d) {
    var box = clear($('compare')), c = d.compare;
    if (!c) {
      box.appendChild(empty(live.run ? 'No comparison: pick a run in "compare with" above.' :
        'No comparison: tprof report RUN_A RUN_B (or --compare A B) makes one.'));
      return;
    }
    box.appendChild(el('div', { 'class': 'cards' }, [
      card('cmp-a-mean', 'A mean step (' + c.a.path + ')', c.a.mean_step_us, 'us'),
      card('cmp-b-mean', 'B mean step (' + c.b.path + ')', c.b.mean_step_us, 'us'),
      card('cmp-change', 'step time change', c.step_change_pct, 'pct')]));
    // each side's warnings, a line both sides say once (as the text report's Warnings)
    var wa = c.a.warnings || [], wb = c.b.warnings || [];
    wa.map(function (w) { return (wb.indexOf(w) >= 0 ? 'A, B: ' : 'A: ') + w; })
      .concat(wb.filter(function (w) { return wa.indexOf(w) < 0; })
        .map(function (w) { return 'B: ' + w; }))
      .forEach(function (w) { box.appendChild(el('div', { 'class': 'warn cmp-warn', text: w })); });
    var cols = function (what) {
      return [{ key: 'name', label: what }, { key: 'status', label: 'status' },
              { key: 'a_us', label: 'A', format: 'us' }, { key: 'b_us', label: 'B', format: 'us' },
              { key: 'delta_us', label: 'B - A', format: 'us' }, { key: 'delta_pct', label: 'change', format: 'pct' },
              { key: 'a_calls', label: 'A calls', format: 'num' }, { key: 'b_calls', label: 'B calls', format: 'num' }];
    };
    var sign = function (r) { return r.delta_us > 0 ? 'regression' : r.delta_us < 0 ? 'improvement' : ''; };
    [['stages', 'stage', 'Stages (time per step)'], ['ops', 'op', 'Ops (self time)'],
     ['kernels', 'kernel', 'Kernels (total time)']].forEach(function (p) {
      var rows = c[p[0]].slice().sort(function (x, y) {
        return y.delta_us - x.delta_us || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0); });
      box.appendChild(el('h2', { text: p[2] + ', regressions first' }));
      var t = el('div');
      box.appendChild(t);
      table(t, 'cmp-' + p[0], cols(p[1]), rows, { filter: p[0] !== 'stages', rowClass: sign });
    });
  }

  function artifacts(d) {
    var box = clear($('artifacts'));
    if (!d.artifacts) { box.appendChild(empty('Not a run directory: no files to list.')); return; }
    // served: the run's folder, then where its files are in it (artifacts_href: "tprof/" or "")
    var base = (live.run ? 'runs/' + encodeURIComponent(live.run) + '/' : '') +
      (d.artifacts_href || '');
    var tbody = el('tbody');
    d.artifacts.forEach(function (f) {
      var link = el('a', { href: base + encodeURIComponent(f.name), text: f.name });
      var size = el('td', { text: fmtBytes(f.bytes) });
      size.setAttribute('data-v', String(f.bytes));
      tbody.appendChild(el('tr', {}, [el('td', {}, [link]), size]));
    });
    box.appendChild(el('div', { 'class': 'table-box' }, [el('table', { id: 'artifacts-table' }, [
      el('thead', {}, [el('tr', {}, [el('th', { text: 'file' }), el('th', { text: 'size' })])]), tbody])]));
    if (d.artifacts_total > d.artifacts.length)
      box.appendChild(el('p', { 'class': 'note', text: 'The first ' + d.artifacts.length + ' of ' +
        d.artifacts_total + ' files, by name.' }));
  }

  var views = { overview: overview, operators: operators, kernels: kernels, memory: memory,
                timeline: timeline, ranks: ranks, compare: compare, artifacts: artifacts };
  /* views of their own files, embedded before this one (stacks.js, modules.js), called with the
   * helpers they share with this one */
  var helpers = { $: $, el: el, clear: clear, empty: empty, table: table, fmtUs: fmtUs, fmtPct: fmtPct,
                  formats: formats, liveTrace: function (fresh) { return liveTrace(fresh); } };
  Object.keys(window.tprofViews || {}).forEach(function (k) {
    views[k] = function (d) { window.tprofViews[k](d, helpers); };
  });

  /* What the views render: the data, or with a comparison and side B picked, B's analysis and
   * timeline in A's place (the report of `tprof report A B` holds both). */
  function shown() {
    if (side !== 'b' || !data.analysis_b) return data;
    return Object.assign({}, data, { analysis: data.analysis_b, series: data.series_b,
                                     artifacts: undefined, title: data.compare.b.path });
  }

  function renderView() {
    if (!data || rendered[view]) return;
    rendered[view] = true;
    views[view](shown());
  }

  function show(name) {
    if (!views[name]) return;
    view = name;
    document.querySelectorAll('#tabs button').forEach(function (b) {
      b.classList.toggle('active', b.getAttribute('data-view') === name); });
    document.querySelectorAll('.view').forEach(function (s) {
      s.classList.toggle('active', s.id === 'view-' + name); });
    if (location.hash !== '#' + name) history.replaceState(null, '', '#' + name);
    renderView();
  }

  function setData(d) {
    data = d;
    rendered = {};
    var sel = $('side-select');
    $('side-picker').hidden = !(d.analysis_b && d.compare);
    if ($('side-picker').hidden) side = 'a';
    else {
      sel.options[0].textContent = 'A: ' + d.compare.a.path;
      sel.options[1].textContent = 'B: ' + d.compare.b.path;
      sel.value = side;
    }
    $('title').textContent = d.title || '';
    document.title = 'tprof: ' + (d.title || 'report');
    renderView();
  }

  /* ---- the live dashboard (tprof serve): runs listed, the chosen run's data polled ---- */

  var live = { run: null, against: '', text: null, trace: null };

  function fetchJson(url) {
    return fetch(url, { cache: 'no-store' }).then(function (r) {
      if (!r.ok) throw new Error(url + ': HTTP ' + r.status);
      return r.text();
    });
  }

  /* The chosen run's Trace view (api/trace), asked once per run and kept, not polled: its ranges
   * may weigh tens of MB. {run, at, promise, trace once read, error}; null outside tprof serve;
   * fresh: asked again. */
  function liveTrace(fresh) {
    if (!live.run) return null;
    if (fresh || !live.trace || live.trace.run !== live.run) {
      var asked = { run: live.run, at: new Date(), trace: null, error: null };
      asked.promise = fetch('api/trace?run=' + encodeURIComponent(live.run), { cache: 'no-store' })
        .then(function (r) {
          return r.text().then(function (text) {
            var body = null;
            try { body = JSON.parse(text); } catch (e) { body = null; }
            if (!r.ok || !body || !body.trace) throw new Error((body && body.error) || text.trim() || 'HTTP ' + r.status);
            asked.trace = body.trace;
          });
        }).catch(function (e) { asked.error = String(e.message || e); });
      live.trace = asked;
    }
    return live.trace;
  }

  /* Fills a menu with names (and a first empty choice when none is given), keeping its choice. */
  function fillMenu(sel, names, none, keep) {
    var want = (none !== null ? [''] : []).concat(names);
    var current = Array.prototype.map.call(sel.options, function (o) { return o.value; });
    if (current.join('\n') === want.join('\n')) return;
    clear(sel);
    want.forEach(function (n) { sel.appendChild(el('option', { value: n, text: n || none })); });
    if (want.indexOf(keep) >= 0) sel.value = keep;
  }

  function pollRuns() {
    return fetchJson('api/runs').then(function (text) {
      var runs = JSON.parse(text), leftOut = (runs && runs.left_out) || 0;
      if (runs && runs.runs) runs = runs.runs;
      var sel = $('run-select');
      sel.title = leftOut ? leftOut + ' older folders not listed' : '';
      var names = runs.map(function (r) { return typeof r === 'string' ? r : r.name; });
      fillMenu(sel, names, null, live.run);
      fillMenu($('compare-select'), names, '(none)', live.against);
      if (!live.run && names.length) live.run = names[names.length - 1], sel.value = live.run;
    });
  }

  /* The chosen run's data, or with a run to compare with, the pair's (api/compare: the data of
   * `tprof report --compare RUN OTHER`). */
  function pollData() {
    if (!live.run) return Promise.resolve();
    var run = live.run, against = live.against;
    var url = against ? 'api/compare?a=' + encodeURIComponent(run) + '&b=' + encodeURIComponent(against)
                      : 'api/data?run=' + encodeURIComponent(run);
    return fetchJson(url).then(function (text) {
      if (run !== live.run || against !== live.against || text === live.text) return;
      live.text = text;
      setData(JSON.parse(text));
      $('live-state').textContent = 'updated ' + new Date().toLocaleTimeString();
    });
  }

  function startLive() {
    $('run-picker').hidden = false;
    $('compare-picker').hidden = false;
    $('run-select').addEventListener('change', function () {
      live.run = this.value; live.text = null; pollData();
    });
    $('compare-select').addEventListener('change', function () {
      live.against = this.value; live.text = null; side = 'a';
      if (live.against) show('compare');
      pollData();
    });
    var tick = function () {
      pollRuns().then(pollData).catch(function (e) { $('live-state').textContent = String(e.message || e); })
        .then(function () { setTimeout(tick, 1000); });
    };
    tick();
  }

  function start() {
    document.querySelectorAll('#tabs button').forEach(function (b) {
      b.addEventListener('click', function () { show(b.getAttribute('data-view')); });
    });
    timelineEvents();
    $('side-select').addEventListener('change', function () {
      side = this.value; rendered = {}; renderView(); });
    window.addEventListener('resize', function () { if (view === 'timeline' && data) timelineDraw(); });
    var embedded = $('tprof-data');
    if (embedded) setData(JSON.parse(embedded.textContent));
    else startLive();
    show(location.hash.length > 1 ? location.hash.slice(1) : 'overview');
  }

  start();
})();
