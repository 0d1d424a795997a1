"""tprof.analyze(...)'s tables as pandas DataFrames: each equals, column by column and row by row,
the list of the same name in `tprof analyze --json` (the C program, run here) over the same real
traces (tests/fixtures); pandas stays optional (an ImportError naming it, the dict unchanged)."""
import json
import math
import os
import subprocess

import pytest

import tprof
from conftest import run_python

pd = pytest.importorskip("pandas")

FIXTURES = os.environ.get("TPROF_FIXTURES", os.path.join(os.path.dirname(__file__), "..",
                                                         "fixtures"))
BUILD = os.environ.get("TPROF_BUILD_DIR", "build")

# fixtures whose tables have rows: op shapes and memory (torch2), kernels (H200, BERT on H100),
# steps with stages (the advice traces), two ranks (HTA's sampled pair, in a folder)
CASES = {
    "cnn": ["torch2/cnn_cpu_3steps.pt.trace.json.gz"],
    "h200": ["gpu-h200/torch_mlp.torch_profiler.pt.trace.json.gz"],
    "bert": ["kineto/gaunernst_bert-small-uncased__1016001.json.gz"],
    "dataloader": ["advice/torch_dataloader_bound.json.gz"],
    "ranks": ["kineto/sampled_rank-0.json.gz", "kineto/sampled_rank-1.json.gz"],
}


def cli_json(paths, top_k=10):
    r = subprocess.run([os.path.join(BUILD, "tprof"), "analyze", "--json", "--top", str(top_k),
                        *paths], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def spread(row, prefix=""):
    """A JSON row's objects as "key.member" columns (computed here, not by tprof)."""
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(spread(value, prefix + key + "."))
        else:
            out[prefix + key] = value
    return out


def same(got, want):
    """A cell holds the JSON's value: null as None or NaN, a number equal to it (an integer
    column with nulls is float64: exact below 2**53), a string as itself."""
    if want is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    return got == want and isinstance(got, str) == isinstance(want, str)


def assert_frame_is(frame, rows):
    """frame holds rows (the JSON's), one column per key, in order, the values equal."""
    rows = [spread(r) for r in rows]
    if not rows:  # its columns: test_tables_have_rows_where_the_traces_do
        assert len(frame) == 0
        return
    assert len(frame) == len(rows) and list(frame.index) == list(range(len(rows)))
    columns = []
    for r in rows:
        columns += [c for c in r if c not in columns]
    assert list(frame.columns) == columns
    for column in columns:
        got = frame[column].tolist()
        want = [r.get(column) for r in rows]
        assert all(same(g, w) for g, w in zip(got, want)), (column, got, want)


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request, tmp_path_factory):
    """(the Analysis of tprof.analyze, the CLI's JSON) for one fixture: a file, or a folder of
    the two ranks' traces."""
    files = [os.path.join(FIXTURES, f) for f in CASES[request.param]]
    if len(files) == 1:
        path = files[0]
    else:  # the folder's files, as tprof.analyze reads them: in name order
        path = tmp_path_factory.mktemp(request.param)
        for f in files:
            os.symlink(f, path / os.path.basename(f))
        files = sorted(str(path / os.path.basename(f)) for f in files)
    return tprof.analyze(path, top_k=7), cli_json(files, top_k=7)


def test_analysis_is_the_cli_json(case):
    analysis, doc = case
    assert isinstance(analysis, tprof.Analysis) and isinstance(analysis, dict)
    assert analysis == doc


def test_each_table_equals_the_cli_json(case):
    analysis, doc = case
    assert_frame_is(analysis.ops(), doc["top_cpu_ops"])
    assert_frame_is(analysis.ops_by_shape(), doc["top_cpu_ops_by_shape"])
    assert_frame_is(analysis.kernels(), doc["top_gpu_kernels"])
    assert_frame_is(analysis.stages(), doc["stages"] + [doc["other"]])
    assert_frame_is(analysis.steps(), doc["steps"]["list"])
    assert_frame_is(analysis.memory(), doc["memory"])
    assert_frame_is(analysis.ranks(), doc["ranks"]["per_rank"] if "ranks" in doc else [])


def test_tables_have_rows_where_the_traces_do():
    """The cases above are not all empty tables: each table has rows in some fixture, and the
    columns of an empty table are those its rows have."""
    docs = {name: cli_json([os.path.join(FIXTURES, f) for f in files])
            for name, files in CASES.items()}
    analyses = {name: tprof.Analysis(doc) for name, doc in docs.items()}
    for table in ("ops", "ops_by_shape", "kernels", "stages", "steps", "memory", "ranks"):
        frames = [getattr(a, table)() for a in analyses.values()]
        full = [f for f in frames if len(f)]
        assert full, table
        for f in frames:
            if not len(f):  # an empty table's columns: the (stage-free) columns of its rows
                assert list(f.columns) == [c for c in full[0].columns
                                           if not c.startswith(("stages.", "stages_ns.",
                                                                "stages_per_step_ns."))], table
    ranks = analyses["ranks"].ranks()
    assert ranks["rank"].tolist() == [0, 1]
    assert "stages_ns.forward" in ranks.columns and ranks["stages_ns.forward"].gt(0).all()
    steps = analyses["dataloader"].steps()
    assert steps["stages.dataloader"].gt(0).all()
    # what the columns add up to, against the dict: each step's stages and other fill the step
    stage_cols = [c for c in steps.columns if c.startswith("stages.")]
    total = steps[stage_cols].sum(axis=1) + steps["other_us"]
    assert (total - steps["dur_us"]).abs().max() < 0.01


def test_profile_summary_is_an_analysis(out_dir):
    with tprof.profile(output_dir=out_dir, run_id="df", wait=0, active=2, summary=False) as p:
        for _ in range(2):
            with tprof.stage("forward"):
                pass
            p.step()
    summary = p.summary()
    assert isinstance(summary, tprof.Analysis)
    assert summary.steps()["number"].tolist() == [s["number"] for s in summary["steps"]["list"]]
    assert summary.stages()["stage"].tolist()[-1] == "other"


def test_without_pandas_an_import_error_names_it():
    """pandas hidden (an import hook that refuses it): analyze still returns the dict, and a
    table method raises ImportError naming pandas."""
    r = run_python("""
        import sys
        class NoPandas:
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "pandas":
                    raise ImportError("No module named 'pandas' (hidden by the test)")
        sys.meta_path.insert(0, NoPandas())
        import tprof
        a = tprof.analyze(sys.argv[1])
        print("STEPS", a["steps"]["count"])
        try:
            a.ops()
        except ImportError as e:
            print("ERROR", e.name, e)
        print("PANDAS", "pandas" in sys.modules)
    """, args=[os.path.join(FIXTURES, CASES["cnn"][0])])
    assert r.returncode == 0, r.stderr
    assert "STEPS 3" in r.stdout
    assert "ERROR pandas " in r.stdout and "pip install pandas" in r.stdout
    assert "PANDAS False" in r.stdout


# fixtures with a module tree (Kineto's names with stacks, tprof's paths with GPU kernels)
TREES = ["torch2/cnn_cpu_3steps.pt.trace.json.gz", "gpu-h200/torch_mlp.tprof.json.gz",
         "kineto/gaunernst_bert-small-uncased__1016001.json.gz"]


@pytest.mark.parametrize("trace", TREES)
def test_modules_and_call_stacks_equal_the_cli_json(trace):
    """modules(), module_ops() and call_stacks() hold the numbers of the CLI's `modules` and
    `call_stacks` keys: each node's path rebuilt here from its parent chain, every figure equal;
    one row per module op and per (op or kernel, caller)."""
    path = os.path.join(FIXTURES, trace)
    analysis, doc = tprof.analyze(path, top_k=7), cli_json([path], top_k=7)
    nodes = doc["modules"]["nodes"]
    assert nodes

    def chain(i):
        return (chain(nodes[i]["parent"]) if nodes[i]["parent"] is not None else []) + [
            nodes[i]["name"]]

    frame = analysis.modules()
    assert frame["path"].tolist() == ["/".join(chain(i)) for i in range(len(nodes))]
    assert [None if isinstance(p, float) else p for p in frame["parent"].tolist()] == [
        "/".join(chain(n["parent"])) if n["parent"] is not None else None for n in nodes]
    assert_frame_is(frame.drop(columns=["path", "parent"]),
                    [{k: v for k, v in n.items() if k not in ("parent", "ops")} for n in nodes])
    ops = analysis.module_ops()
    assert_frame_is(ops.drop(columns=["path"]), [o for n in nodes for o in n["ops"]])
    assert ops["path"].tolist() == ["/".join(chain(i)) for i, n in enumerate(nodes)
                                    for _ in n["ops"]]
    stacks = analysis.call_stacks()
    want = [(kind, item, c) for kind, key in (("op", "ops"), ("kernel", "kernels"))
            for item in doc.get("call_stacks", {}).get(key, []) for c in item["callers"]]
    assert len(stacks) == len(want)
    for row, (kind, item, c) in zip(stacks.to_dict("records"), want):
        assert row["kind"] == kind and row["stack"] == tuple(c["stack"])
        for k in ("name", "total_us", "python_pct", "stacks"):
            assert same(row[k], item[k]), k
        for k in ("calls", "time_us", "pct"):
            assert same(row[k], c[k]), k
    if "call_stacks" in doc:
        assert len(stacks) > 0


def test_modules_and_call_stacks_empty_without_them():
    """A trace without module or python_function ranges: empty tables with their columns."""
    analysis = tprof.analyze(os.path.join(FIXTURES, "kineto", "sampled_rank-0.json.gz"))
    assert "modules" not in analysis and "call_stacks" not in analysis
    full = tprof.analyze(os.path.join(FIXTURES, TREES[0]))
    for table in ("modules", "module_ops", "call_stacks"):
        empty, rows = getattr(analysis, table)(), getattr(full, table)()
        assert len(empty) == 0 and len(rows) > 0, table
        assert list(empty.columns) == list(rows.columns), table
