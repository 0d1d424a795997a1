/* stacks.js - the report's "Call stacks" view (docs/REPORT.md): a flame graph of the Python time
 * from the report data's `flame` nodes (src/report/stacks_report.c), and the Python callers of
 * the top ops and kernels (`analysis.call_stacks`). Embedded before report.js, it registers its
 * view on window.tprofViews; report.js calls it with its helpers (el, clear, empty, table, ...).
 *
 * The graph is an icicle: outermost frames on top, each frame as wide as its total time (its self
 * time and its children's), children left to right by name, as flamegraph.pl lays them out.
 * Clicking a frame zooms to it (its ancestors stay above it, full width); frames narrower than
 * a pixel are not drawn, nor their children, so a tree of any size draws in O(frames shown). */
(function () {
  'use strict';
  var ROW = 18; // pixels per frame

  function tree(f) {
    var nodes = f.nodes.map(function (r, i) {
      return { i: i, parent: null, up: r[0], name: r[1], total: r[2],
               self: r[3], python: r[4] === 1, kids: [] };
    });
    var roots = [];
    nodes.forEach(function (n) {
      n.parent = n.up >= 0 ? nodes[n.up] : null;
      (n.parent ? n.parent.kids : roots).push(n);
    });
    var byName = function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : a.i - b.i; };
    nodes.forEach(function (n) { n.kids.sort(byName); });
    roots.sort(byName);
    return { nodes: nodes, roots: roots };
  }

  function color(n) {
    var h = 0;
    for (var i = 0; i < n.name.length; i++) h = (h * 31 + n.name.charCodeAt(i)) >>> 0;
    return n.python ? 'hsl(' + (20 + h % 30) + ', 85%, ' + (58 + h % 12) + '%)'
                    : 'hsl(' + (195 + h % 30) + ', 60%, ' + (62 + h % 12) + '%)';
  }

  function flame(box, d, ui) {
    var f = d.flame, t = tree(f), focus = null;
    var bar = ui.el('div', { 'class': 'toolbar' });
    var reset = ui.el('button', { id: 'flame-reset', text: 'reset zoom' });
    var info = ui.el('span', { id: 'flame-info', 'class': 'note' });
    bar.appendChild(reset);
    bar.appendChild(info);
    var graph = ui.el('div', { id: 'flame' });
    graph.style.position = 'relative';
    graph.style.overflow = 'hidden';
    graph.style.font = '11px sans-serif';
    box.appendChild(bar);
    box.appendChild(graph);

    function frame(n, left, width, row, span, px) {
      var wide = width / span * px >= 24; /* room for a label */
      var div = ui.el('div', { 'class': 'flame-frame', text: wide ? n.name : '' });
      var pct = f.total_ns > 0 ? 100 * n.total / f.total_ns : 0;
      div.title = n.name + '\n' + ui.fmtUs(n.total / 1e3) + ' (' + ui.fmtPct(pct) + ' of the Python time), self ' +
        ui.fmtUs(n.self / 1e3);
      div.setAttribute('data-node', String(n.i));
      div.setAttribute('data-total', String(n.total));
      var s = div.style;
      s.position = 'absolute';
      s.left = (100 * left / span) + '%';
      s.width = (100 * width / span) + '%';
      s.top = row * ROW + 'px';
      s.height = ROW - 1 + 'px';
      s.lineHeight = ROW - 1 + 'px';
      s.background = color(n);
      s.overflow = 'hidden';
      s.whiteSpace = 'nowrap';
      s.textOverflow = 'ellipsis';
      s.boxSizing = 'border-box';
      s.borderRight = '1px solid #fff';
      s.padding = wide ? '0 3px' : '0';
      s.cursor = 'pointer';
      div.addEventListener('click', function () { focus = n; draw(false); });
      graph.appendChild(div);
    }

    function draw(again) {
      ui.clear(graph);
      var px = graph.clientWidth || 1000, rows = 0, shown = 0;
      graph.setAttribute('data-px', String(px)); /* the width the frames were chosen for */
      var chain = [];
      for (var a = focus; a; a = a.parent) chain.unshift(a);
      var span = focus ? focus.total : f.total_ns;
      chain.forEach(function (n, k) { frame(n, 0, span, k, span, px); shown++; });
      var place = function (list, left, row) {
        rows = Math.max(rows, row + 1);
        list.forEach(function (n) {
          if (n.total / span * px >= 1) {
            frame(n, left, n.total, row, span, px);
            shown++;
            place(n.kids, left + n.self, row + 1); /* self first, then the children */
          }
          left += n.total;
        });
      };
      if (focus) place(focus.kids, focus.self, chain.length);
      else place(t.roots, 0, 0);
      rows = Math.max(rows, chain.length);
      graph.style.height = rows * ROW + 'px';
      info.textContent = (focus ? focus.name + ': ' + ui.fmtUs(focus.total / 1e3) + '. ' : '') +
        shown + ' frames drawn of ' + f.nodes.length + (f.nodes_total > f.nodes.length
          ? ' (the ' + f.nodes_total + ' stacks cut to those with the most time)' : '') + '.';
      /* the graph's height may have brought a scroll bar, narrowing it: choose again, once */
      if (!again && graph.clientWidth && graph.clientWidth !== px) draw(true);
    }

    reset.addEventListener('click', function () { focus = null; draw(false); });
    draw(false);
  }

  function callers(box, d, ui) {
    var cs = d.analysis.call_stacks, rows = [];
    [['ops', 'op'], ['kernels', 'kernel']].forEach(function (p) {
      cs[p[0]].forEach(function (r) {
        r.callers.forEach(function (c) {
          var py = c.stack.filter(function (s) { return s.indexOf('.py(') > 0; });
          rows.push({ name: r.name, kind: p[1], caller: py.length ? py[py.length - 1] : c.stack[c.stack.length - 1],
                      stack: c.stack.join(' \u2192 '), calls: c.calls, time_us: c.time_us, pct: c.pct });
        });
      });
    });
    box.appendChild(ui.el('h2', { text: 'Who called the top ops and kernels' }));
    var t = ui.el('div');
    box.appendChild(t);
    ui.table(t, 'callers-table', [
      { key: 'name', label: 'op or kernel' }, { key: 'kind', label: 'kind' },
      { key: 'caller', label: 'innermost Python frame' }, { key: 'pct', label: 'share', format: 'pct' },
      { key: 'calls', label: 'calls', format: 'num' }, { key: 'time_us', label: 'time', format: 'us' },
      { key: 'stack', label: 'stack (outermost first)' }], rows, { filter: true });
  }

  function render(d, ui) {
    var box = ui.clear(ui.$('stacks'));
    if (!d.flame || !d.flame.nodes.length) {
      box.appendChild(ui.empty('No call stacks: the trace has no python_function ranges ' +
                               '(torch.profiler or tprof.profile with with_stack=True record them).'));
      return;
    }
    box.appendChild(ui.el('p', { 'class': 'note', text: 'The Python time of the window as a flame ' +
      'graph: each frame as wide as its time, with its callees below it. Click a frame to zoom.' }));
    var graph = ui.el('div');
    box.appendChild(graph);
    if (d.analysis.call_stacks) callers(box, d, ui);
    flame(graph, d, ui); /* last: the page's final height decides its width (a scroll bar) */
  }

  window.tprofViews = window.tprofViews || {};
  window.tprofViews.stacks = render;
})();
