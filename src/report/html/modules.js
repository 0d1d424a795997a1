/* modules.js - the report page's Modules view (docs/REPORT.md, "Modules"): the module tree of
 * the report data's "modules" key (tprof analyze --json, docs/ANALYZE_JSON.md) as a table whose
 * rows open and close. A module's row opens onto its ops (the forward ops directly inside it,
 * the backward nodes attributed to it), then its child modules. Like report.js, it computes no
 * figure: each cell carries its exact value in data-v, for the browser tests. It runs before
 * report.js, which calls it through window.tprofViews with its helpers. */
(function () {
  'use strict';

  var style = document.createElement('style');
  style.textContent =
    '#modules-table td:first-child { white-space: nowrap; word-break: normal; }' +
    '#modules-table tr.mod-op td:first-child { font-style: italic; color: var(--muted); }' +
    '#modules-table button.mod-toggle { border: 0; background: none; cursor: pointer;' +
    ' width: 1.4em; padding: 0; font: inherit; }' +
    '#modules-table span.mod-pad { display: inline-block; width: 1.4em; }';
  document.head.appendChild(style);

  var columns = [
    ['calls', 'calls', 'num'], ['forward_us', 'forward', 'us'], ['forward_self_us', 'forward self', 'us'],
    ['backward_us', 'backward', 'us'], ['backward_self_us', 'backward self', 'us'],
    ['flops', 'FLOPs', 'num'], ['gpu_us', 'GPU time', 'us'], ['kernels', 'kernels', 'num']
  ];

  /* An op's cells in the node's columns: its time under forward or backward by its pass. */
  function opCells(op) {
    var back = op.pass === 'backward';
    return { calls: op.calls, forward_us: back ? null : op.total_us, backward_us: back ? op.total_us : null,
             flops: op.flops, gpu_us: op.gpu_us, kernels: op.kernels };
  }

  function row(h, columns, cls, id, depth, label, toggle, cells) {
    var first = h.el('td', {}, [h.el('span', { 'class': 'mod-indent' })]);
    first.firstChild.style.paddingLeft = (depth * 1.2) + 'em';
    first.appendChild(toggle || h.el('span', { 'class': 'mod-pad' }));
    first.appendChild(document.createTextNode(label));
    var tr = h.el('tr', { 'class': cls, id: id }, [first]);
    columns.forEach(function (c) {
      var v = cells[c[0]];
      var td = h.el('td', { 'data-key': c[0],
                            text: v === null || v === undefined ? '' : h.formats[c[2]](v) });
      td.setAttribute('data-v', v === null || v === undefined ? '' : String(v));
      tr.appendChild(td);
    });
    return tr;
  }

  function render(d, h) {
    var box = h.clear(h.$('modules'));
    var m = d.analysis.modules, nodes = m ? m.nodes : [];
    if (!nodes.length) {
      box.appendChild(h.empty('No module ranges in this input: record with tprof.profile(model=...), ' +
        'or torch.profiler with with_stack=True (its nn.Module ranges).'));
      return;
    }
    box.appendChild(h.el('p', { 'class': 'note', text:
      'The model\u2019s modules as a tree: forward is the time of a module\u2019s calls, backward that of ' +
      'the backward ops its forward made (joined through autograd\u2019s sequence numbers); self leaves ' +
      'its child modules out. Click \u25b8 to open a module onto its ops and child modules.' }));
    /* the GPU's columns only where some module launched GPU work */
    var gpu = nodes.some(function (n) { return n.kernels > 0; });
    var cols = columns.filter(function (c) { return gpu || (c[0] !== 'gpu_us' && c[0] !== 'kernels'); });
    var open = {}, rows = [], parentOf = [];
    nodes.forEach(function (n, i) { open[i] = n.depth === 0; });
    var tbody = h.el('tbody');
    function visible(p) {
      for (; p !== null && p !== undefined; p = nodes[p].parent) if (!open[p]) return false;
      return true;
    }
    function refresh() {
      rows.forEach(function (r, i) { r.hidden = !visible(parentOf[i]); });
      nodes.forEach(function (n, i) {
        var b = h.$('mod-toggle-' + i);
        if (b) b.textContent = open[i] ? '\u25be' : '\u25b8';
      });
    }
    nodes.forEach(function (n, i) {
      var toggle = null;
      var kids = n.ops.length || (i + 1 < nodes.length && nodes[i + 1].parent === i);
      if (kids) {
        toggle = h.el('button', { 'class': 'mod-toggle', id: 'mod-toggle-' + i, type: 'button',
                                  'aria-label': 'open or close ' + n.name });
        toggle.addEventListener('click', function () { open[i] = !open[i]; refresh(); });
      }
      var tr = row(h, cols, 'mod-node', 'mod-' + i, n.depth, n.name, toggle, n);
      tbody.appendChild(tr); rows.push(tr); parentOf.push(n.parent);
      n.ops.forEach(function (op, k) {
        var label = (op.pass === 'backward' ? 'backward: ' : '') + op.name;
        var r = row(h, cols, 'mod-op', 'mod-' + i + '-op-' + k, n.depth + 1, label, null, opCells(op));
        tbody.appendChild(r); rows.push(r); parentOf.push(i);
      });
    });
    var heads = [h.el('th', { text: 'module' })].concat(cols.map(function (c) {
      return h.el('th', { text: c[1], 'data-key': c[0] }); }));
    box.appendChild(h.el('div', { 'class': 'table-box' }, [h.el('table', { id: 'modules-table' }, [
      h.el('thead', {}, [h.el('tr', {}, heads)]), tbody])]));
    refresh();
    if (nodes.length < m.nodes_total)
      box.appendChild(h.el('p', { 'class': 'note', text: 'The first ' + nodes.length + ' of ' +
        m.nodes_total + ' modules, depth first (tprof analyze --json has them all).' }));
    if (m.unlinked_backward_calls)
      box.appendChild(h.el('p', { 'class': 'note', id: 'modules-unlinked', text:
        m.unlinked_backward_calls + ' backward calls (' + h.formats.us(m.unlinked_backward_us) +
        ') come from forward ops outside every module (the loss, for one).' }));
  }

  window.tprofViews = window.tprofViews || {};
  window.tprofViews.modules = render;
})();
