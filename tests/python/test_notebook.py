"""examples/notebook.ipynb executed by a real Jupyter kernel (nbclient + ipykernel, the kernel
this test's interpreter): the summary is in the profiling cell's stderr stream, once; the profile,
the analysis and the comparison display as HTML whose every number is the one `tprof analyze
--json` and `tprof compare --json` (the C command, run here on the same run directories) give.
The HTML is self-contained (no script, no external resource)."""
import html.parser
import json
import os
import re
import subprocess
import sys

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")
pytest.importorskip("torch")

SOURCE = os.environ.get("TPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TPROF_BUILD_DIR", "build")
NOTEBOOK = os.path.join(SOURCE, "examples", "notebook.ipynb")


class _Figures(html.parser.HTMLParser):
    """Every cell with a data-value, as {table data-key: [{data-field: value}, ...]}, and the
    tags and attributes that would reach outside the page."""

    def __init__(self):
        super().__init__()
        self.tables, self.key, self.row, self.outside = {}, None, None, []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "link", "img", "iframe") or any(
                v and re.match(r"\s*(https?:|//)", v) for v in a.values()):
            self.outside.append((tag, attrs))
        if "data-key" in a:
            self.key = a["data-key"]
            self.tables.setdefault(self.key, [])
        if tag == "tr":
            self.row = {}
            self.tables.setdefault(self.key, []).append(self.row)
        if "data-field" in a and "data-value" in a:
            self.row[a["data-field"]] = json.loads(a["data-value"])


def figures(html_text):
    p = _Figures()
    p.feed(html_text)
    assert p.outside == []
    return {k: [r for r in rows if r] for k, rows in p.tables.items()}


def cli_json(*args):
    r = subprocess.run([os.path.join(BUILD, "tprof"), *args, "--json"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def get(d, dotted):
    for part in dotted.split("."):
        d = d[part]
    return d


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook run once by a kernel of this interpreter (a kernelspec of its own), writing
    its runs under a temporary output_dir (TPROF_OUTPUT_DIR, which tprof.profile reads)."""
    tmp = tmp_path_factory.mktemp("notebook")
    spec = tmp / "jupyter" / "kernels" / "tprof-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tprof test", "language": "python"}))
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "TPROF_OUTPUT_DIR")}
    os.environ.update(JUPYTER_PATH=str(tmp / "jupyter"), TPROF_OUTPUT_DIR=str(tmp / "runs"))
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        nbclient.NotebookClient(nb, kernel_name="tprof-test", timeout=300,
                                resources={"metadata": {"path": str(tmp)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    code = [c for c in nb.cells if c.cell_type == "code"]
    return code, tmp / "runs"


def outputs(cell, kind):
    if kind == "html":
        return [o["data"]["text/html"] for o in cell.outputs
                if o.output_type == "execute_result" and "text/html" in o.get("data", {})]
    return "".join(o.get("text", "") for o in cell.outputs
                   if o.output_type == "stream" and o.name == kind)


def test_summary_in_the_cells_stderr(executed):
    code, runs = executed
    err = outputs(code[1], "stderr")
    (run_dir,) = re.findall(r"^tprof summary: 1 window of (.*)$", err, re.M)
    assert os.path.dirname(run_dir) == str(runs)
    assert err.count("Step time") == 1 and "Recommendations" in err  # all of it, once
    assert ("Artifacts: %s/\n" % run_dir) in err
    assert outputs(code[1], "stdout") == ""
    for cell in code:
        assert not [o for o in cell.outputs if o.output_type == "error"]


def run_dirs(code):
    (before,) = re.findall(r"^tprof summary: 1 window of (.*)$", outputs(code[1], "stderr"), re.M)
    after = [os.path.join(os.path.dirname(before), n) for n in os.listdir(os.path.dirname(before))
             if os.path.join(os.path.dirname(before), n) != before]
    assert len(after) == 1
    return before, after[0]


def check_analysis(shown, want):
    overview = dict(kv for row in shown["overview"] for kv in row.items())
    assert {"steps.count", "steps.mean_us", "steps.p95_us", "dataloader_pct"} <= set(overview)
    assert {k: get(want, k) for k in overview} == overview
    assert overview["steps.count"] == 8
    assert shown["stages"] == [{k: v for k, v in row.items() if not isinstance(v, str)}
                               for row in want["stages"] + [want["other"]]]
    assert shown["top_cpu_ops"] == [
        {k: row[k] for k in ("calls", "self_us", "self_pct", "total_us", "mean_us", "gpu_us",
                             "flops")} for row in want["top_cpu_ops"]]
    assert len(shown["top_cpu_ops"]) == 10  # the model's ops and stages: a full table


def test_profile_and_analysis_display_the_cli_figures(executed):
    code, _ = executed
    before, _ = run_dirs(code)
    want = cli_json("analyze", before)
    (profile_html,) = outputs(code[2], "html")
    (analysis_html,) = outputs(code[3], "html")
    assert profile_html == analysis_html  # the profile shows its run's analysis
    check_analysis(figures(analysis_html), want)
    assert "data loading: %.1f%% of step time" % want["dataloader_pct"] in \
        outputs(code[3], "stdout")
    for rec in want["recommendations"]:  # the recommendations, their text escaped
        assert html.escape(rec["message"]) in analysis_html
        assert ('<span data-value="%s">' % json.dumps(rec["saving_us"])) in analysis_html
    assert analysis_html.count("<li><b>[") == len(want["recommendations"])


def test_comparison_displays_the_cli_figures(executed):
    code, _ = executed
    before, after = run_dirs(code)
    want = cli_json("compare", before, after)
    (compare_html,) = outputs(code[4], "html")
    shown = figures(compare_html)
    sides = dict(kv for row in shown["sides"] for kv in row.items())
    assert sides == {"a.steps": want["a"]["steps"], "a.mean_step_us": want["a"]["mean_step_us"],
                     "b.steps": want["b"]["steps"], "b.mean_step_us": want["b"]["mean_step_us"],
                     "step_change_pct": want["step_change_pct"]}
    for key in ("stages", "ops"):
        assert shown[key] == [{k: v for k, v in row.items() if not isinstance(v, str)}
                              for row in want[key]], key
    assert outputs(code[4], "stderr") == ""  # summary=False
