"""Issue 24, items 4 and 5: the comparison of two runs in the page and the ranks charts, in
Chromium (the browser and helpers of test_report_browser.py), on real fixtures.

- `tprof report A B` of two run directories (the same MLP on an H200, one run recorded by
  torch.profiler, one by tprof: fixtures/gpu-h200) embeds `tprof analyze --json` of each side
  and `tprof compare --json A B`, exactly; `--compare A B` (the old spelling) gives the same
  data, `--together` the old analysis of both as one run. The Compare view shows every delta row
  of stages, ops and kernels, regressions first, each equal to the JSON and to the difference
  of an independent analysis of each trace (tests/lib/tprof_ref.py); the A/B switch shows B's
  own views (its figures equal `tprof analyze --json B`).
- The Ranks view of two ranks' traces (fixtures/kineto sampled_rank-0/1, NCCL kernels) draws each
  rank's step stacked by stage (the bars equal `stages_per_step_ns`, whose sum is the rank's mean
  step), marks the straggler, and draws each rank's waiting at collectives
  (`collective_wait_ns`), which equals an independent matching of the communication kernels
  (the reference of test_ranks.py).
- `tprof serve` over those runs: picking a run to compare with shows the same Compare view as
  the report (api/compare = `tprof compare --json`), and the ranks run shows the same charts.
Screenshots: build/report-screens/diff-*.png."""

import json
import shutil

import pytest
from cli_helpers import FIXTURES, tprof
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select
from test_ranks import PAIRS, comm_kernels, events, steps_of
from test_report_browser import (  # noqa: F401
    DATA_RE,
    SCREENS,
    analyze,
    as_shown,
    browser,
    check_figures,
    errors,
    figure,
    open_report,
    shown_pct,
    table_values,
)

import tprof_ref
from served import Served, has_serve

SIDES = {"torch": FIXTURES / "gpu-h200" / "torch_mlp.torch_profiler.pt.trace.json.gz",
         "tprof": FIXTURES / "gpu-h200" / "torch_mlp.tprof.json.gz"}
DELTA_KEYS = ["name", "status", "a_us", "b_us", "delta_us", "delta_pct", "a_calls", "b_calls"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """runs/torch and runs/tprof (one trace each), runs/ranks (two ranks' traces)."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    folder = tmp_path_factory.mktemp("diff") / "runs"
    for name, trace in SIDES.items():
        (folder / name).mkdir(parents=True)
        shutil.copy(trace, folder / name / "trace_0001.json.gz")
    (folder / "ranks").mkdir()
    for rank, trace in enumerate(PAIRS["nccl"]):
        shutil.copy(trace, folder / "ranks" / ("trace_0001.rank%d.json.gz" % rank))
    return folder


def analyze_all(*inputs):
    """tprof analyze --json --top 500 of several inputs, as one run."""
    return json.loads(tprof("analyze", "--json", "--top", "500", *inputs, rc=0).stdout)


def page_data(path):
    return json.loads(DATA_RE.search(path.read_bytes()).group(1))


def compare_json(a, b):
    return json.loads(tprof("compare", "--json", "--top", "500", a, b, rc=0).stdout)


def regressions_first(rows):
    """The page's order: the largest increase of B over A first, then by name."""
    return sorted(rows, key=lambda r: (-r["delta_us"], r["name"]))


# ---- tprof report A B ----------------------------------------------------------------------------


def test_report_of_two_runs_holds_both(runs, tmp_path):
    a, b = runs / "torch", runs / "tprof"
    data = page_data(_report(tmp_path, "ab.html", a, b))
    assert data["analysis"] == analyze(a)
    assert data["analysis_b"] == analyze(b)
    assert data["compare"] == compare_json(a, b)
    # B's timeline is B's own report's
    assert data["series_b"] == page_data(_report(tmp_path, "b.html", b))["series"]
    # the old spelling gives the same data
    assert page_data(_report(tmp_path, "old.html", "--compare", a, b)) == data
    # --together: the old analysis of both as one run; two traces (not run directories) too
    together = page_data(_report(tmp_path, "one.html", "--together", a, b))
    assert "compare" not in together and together["analysis"] == analyze_all(a, b)
    traces = page_data(_report(tmp_path, "traces.html", *SIDES.values()))
    assert "compare" not in traces and traces["analysis"] == analyze_all(*SIDES.values())
    p = tprof("report", "--compare", "--together", a, b, "-o", tmp_path / "x.html", rc=2)
    assert b"exclude each other" in p.stderr and not (tmp_path / "x.html").exists()
    # a side that cannot be read: one line naming its file, exit 2, no page
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "trace_0001.json").write_text('{"foo": 1}')
    p = tprof("report", a, bad, "-o", tmp_path / "x.html", rc=2)
    lines = p.stderr.decode().splitlines()
    assert len(lines) == 1 and "trace_0001.json" in lines[0] and "not a valid trace" in lines[0]
    assert not (tmp_path / "x.html").exists()


def _report(tmp_path, name, *args):
    out = tmp_path / name
    tprof("report", *args, "-o", out, rc=0)
    return out


def _reference_deltas():
    """Stage (per step), op (self) and kernel (total) times of each side, and the mean step,
    from tprof_ref's independent analysis of each trace, in microseconds."""
    sides = {}
    for name, trace in SIDES.items():
        r = tprof_ref.analyze(str(trace))
        n = r["steps"]["count"]
        sides[name] = {
            "mean": r["steps"]["mean_us"],
            "stages": {s["stage"]: s["total_us"] / n for s in r["stages"] + [r["other"]]},
            "ops": {o["name"]: o["self_us"] for o in r["top_cpu_ops"]},
            "kernels": {k["name"]: k["total_us"] for k in r["top_gpu_kernels"]}}
    return sides["torch"], sides["tprof"]


def test_compare_view(browser, runs, tmp_path):  # noqa: F811
    a, b = runs / "torch", runs / "tprof"
    want = compare_json(a, b)
    assert want["kernels"] and want["ops"] and want["stages"]
    open_report(browser, _report(tmp_path, "ab.html", a, b))
    check_compare_view(browser, want)
    browser.save_screenshot(str(SCREENS / "diff-compare.png"))
    # each delta equals the difference of an independent analysis of each side
    ref_a, ref_b = _reference_deltas()
    assert want["a"]["mean_step_us"] == pytest.approx(ref_a["mean"], abs=0.001)
    assert want["b"]["mean_step_us"] == pytest.approx(ref_b["mean"], abs=0.001)
    for kind in ("stages", "ops", "kernels"):
        for row in want[kind]:
            ra, rb = ref_a[kind].get(row["name"], 0), ref_b[kind].get(row["name"], 0)
            assert row["a_us"] == pytest.approx(ra, abs=0.001), (kind, row["name"])
            assert row["b_us"] == pytest.approx(rb, abs=0.001), (kind, row["name"])
            assert row["delta_us"] == pytest.approx(rb - ra, abs=0.002), (kind, row["name"])
    # the A/B switch: B's own views, then A's again
    Select(browser.find_element(By.ID, "side-select")).select_by_value("b")
    browser.find_element(By.CSS_SELECTOR, "button[data-view=overview]").click()
    check_figures(browser, analyze(b))
    Select(browser.find_element(By.ID, "side-select")).select_by_value("a")
    check_figures(browser, analyze(a))
    assert errors(browser) == []


def check_compare_view(driver, want):
    """The Compare view holds want (tprof compare --json): the cards, and each table's rows,
    regressions first, coloured by the sign of their change."""
    driver.find_element(By.CSS_SELECTOR, "button[data-view=compare]").click()
    v, t = figure(driver, "cmp-change")
    assert float(v) == want["step_change_pct"]
    assert shown_pct(t) == pytest.approx(want["step_change_pct"], abs=0.051)
    assert float(figure(driver, "cmp-a-mean")[0]) == want["a"]["mean_step_us"]
    assert float(figure(driver, "cmp-b-mean")[0]) == want["b"]["mean_step_us"]
    for kind in ("stages", "ops", "kernels"):
        rows = regressions_first(want[kind])
        got = table_values(driver, "cmp-" + kind, DELTA_KEYS)
        assert got == [[as_shown(r[k]) for k in DELTA_KEYS] for r in rows], kind
        classes = [tr.get_attribute("class") for tr in
                   driver.find_elements(By.CSS_SELECTOR, "#cmp-%s tbody tr" % kind)]
        assert classes == ["regression" if r["delta_us"] > 0 else
                           "improvement" if r["delta_us"] < 0 else "" for r in rows], kind
    assert errors(driver) == []


# ---- the ranks charts ----------------------------------------------------------------------------


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_collective_wait_matches_reference(pair):
    """collective_wait_ns of each rank: at each communication kernel matched on both ranks (by
    order, rank 1 moved onto rank 0's clock as `tprof merge` moves it), the time from its
    start to the later rank's start, summed."""
    ranks = PAIRS[pair]
    got = analyze_all(*ranks)["ranks"]["per_rank"]
    kernels = [comm_kernels(events(p)) for p in ranks]
    n = min(len(k) for k in kernels)
    off = tprof_ref.clock_offset([(x[0], x[1], y[0], y[1])
                                  for x, y in zip(kernels[0][:n], kernels[1][:n])])
    starts = [(x[0], y[0] + off) for x, y in zip(kernels[0][:n], kernels[1][:n])]
    want = [sum(max(s) - s[k] for s in starts) for k in (0, 1)]
    assert [r["collective_wait_ns"] for r in got] == want
    assert max(want) > 0


def test_text_report_shows_collective_wait():
    """The text report's rank table has each rank's collective wait, as the JSON has it."""
    out = tprof("analyze", *PAIRS["nccl"], rc=0).stdout.decode().splitlines()
    rows = analyze_all(*PAIRS["nccl"])["ranks"]["per_rank"]
    head = out.index(next(line for line in out if line.strip().startswith("rank  steps")))
    assert out[head].endswith("collective wait")
    for k, r in enumerate(rows):
        assert r["collective_wait_ns"] >= 1000000  # shown in ms
        assert out[head + 1 + k].endswith("%.3f ms" % (r["collective_wait_ns"] / 1e6))


def test_collective_wait_of_three_ranks(tmp_path):
    """Three ranks' traces with numbered collectives (tprof's `<backend>:<collective>` ranges with
    `seq`, ending together on every rank, so no clock moves): each rank's wait is, at each
    collective, the last arrival less its own, summed; worked out by hand."""
    starts = [(100, 300, 200), (2000, 2100, 2600), (5000, 5700, 5100)]  # us, ranks 0, 1, 2
    ends = [1000, 3000, 6000]
    paths = []
    for rank in range(3):
        evs = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0,
                "dur": 8000, "pid": 1, "tid": 1}]
        evs += [{"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce",
                 "ts": st[rank], "dur": end - st[rank], "pid": 1, "tid": 1, "args": {"seq": i}}
                for i, (st, end) in enumerate(zip(starts, ends))]
        path = tmp_path / ("trace.rank%d.json" % rank)
        path.write_text(json.dumps({"traceEvents": evs}))
        paths.append(path)
    got = analyze_all(*paths)["ranks"]
    # 0: 200 + 600 + 700; 1: 0 + 500 + 0; 2: 100 + 0 + 600 (microseconds)
    assert [r["collective_wait_ns"] for r in got["per_rank"]] == [1500000, 500000, 700000]
    assert [r["clock_offset_ns"] for r in got["per_rank"]] == [0, 0, 0]


def rank_chart(driver, canvas):
    """(labels, {dataset label: values}, {dataset label: border widths}) of a Chart.js chart;
    the datasets' labels in their order (the stacking order) as the dicts' order."""
    labels, sets = driver.execute_script(
        "var c = Chart.getChart(document.getElementById(arguments[0]));"
        "return [c.data.labels, c.data.datasets.map(function (d) {"
        "  return [d.label, d.data, d.borderWidth]; })];", canvas)
    return labels, {d[0]: d[1] for d in sets}, {d[0]: d[2] for d in sets}


def check_ranks_view(driver, want, evs):
    """The Ranks view holds want (the ranks key of tprof analyze --json) as charts and table."""
    driver.find_element(By.CSS_SELECTOR, "button[data-view=ranks]").click()
    strag = want["straggler"]["rank"]
    assert figure(driver, "fig-straggler")[0] == str(strag)
    assert driver.find_element(By.ID, "straggler-message").text == want["straggler"]["message"]
    labels, data, borders = rank_chart(driver, "chart-ranks")
    per_rank = want["per_rank"]
    assert labels == ["rank %d%s" % (r["rank"], " (straggler)" if r["rank"] == strag else "")
                      for r in per_rank]
    stages = list(per_rank[0]["stages_per_step_ns"])
    assert list(data) == stages and stages[-1] == "other"
    for name in stages:
        assert data[name] == [r["stages_per_step_ns"][name] / 1e6 for r in per_rank]
        assert borders[name] == [3 if r["rank"] == strag else 0 for r in per_rank]
    # each bar's height is the rank's mean step, which is its steps' mean in the trace
    for k, r in enumerate(per_rank):
        height = sum(data[name][k] for name in stages) * 1e6
        assert height == pytest.approx(r["step_mean_ns"], abs=len(stages))
        durs = list(steps_of(evs[k]).values())
        assert r["step_mean_ns"] == pytest.approx(sum(durs) / len(durs), abs=1)
    labels, data, _ = rank_chart(driver, "chart-rank-wait")
    assert data["collective wait"] == [r["collective_wait_ns"] / 1e6 for r in per_rank]
    rows = table_values(driver, "ranks-table", ["rank", "collective_wait_us"])
    assert rows == [[str(r["rank"]), as_shown(r["collective_wait_ns"] / 1e3)] for r in per_rank]
    marked = [tr.get_attribute("class") for tr in
              driver.find_elements(By.CSS_SELECTOR, "#ranks-table tbody tr")]
    assert marked == ["straggler" if r["rank"] == strag else "" for r in per_rank]
    assert errors(driver) == []


def test_ranks_charts(browser, runs, tmp_path):  # noqa: F811
    want = analyze(runs / "ranks")["ranks"]
    assert want["straggler"] is not None and want["count"] == 2
    open_report(browser, _report(tmp_path, "ranks.html", runs / "ranks"))
    check_ranks_view(browser, want, [events(p) for p in PAIRS["nccl"]])
    browser.save_screenshot(str(SCREENS / "diff-ranks.png"))


# ---- tprof serve ---------------------------------------------------------------------------------


@pytest.mark.skipif(not has_serve(), reason="tprof built without libmicrohttpd")
def test_served_compare_and_ranks(browser, runs):  # noqa: F811
    import time

    def until(condition, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if condition():
                    return
            except Exception:  # replaced while the page renders
                pass
            time.sleep(0.1)
        raise AssertionError("not on the page within %d s" % timeout)

    a, b = runs / "torch", runs / "tprof"
    want = compare_json(a, b)
    with Served(runs) as s:
        status, _, body = s.get("/api/compare?a=torch&b=tprof")
        assert status == 200
        served = json.loads(body)
        assert served["compare"] == want
        assert served["analysis"] == analyze(a) and served["analysis_b"] == analyze(b)
        browser.get(s.url)
        until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#compare-select option")) == 4)
        Select(browser.find_element(By.ID, "run-select")).select_by_value("torch")
        Select(browser.find_element(By.ID, "compare-select")).select_by_value("tprof")
        until(lambda: browser.find_element(By.ID, "cmp-change").get_attribute("data-v") ==
              str(want["step_change_pct"]))
        check_compare_view(browser, want)
        browser.save_screenshot(str(SCREENS / "diff-served-compare.png"))
        # no run to compare with: the run's own data again
        Select(browser.find_element(By.ID, "compare-select")).select_by_value("")
        browser.find_element(By.CSS_SELECTOR, "button[data-view=ranks]").click()
        Select(browser.find_element(By.ID, "run-select")).select_by_value("ranks")
        until(lambda: browser.find_element(By.ID, "fig-straggler").get_attribute("data-v") == "1")
        check_ranks_view(browser, analyze(runs / "ranks")["ranks"],
                         [events(p) for p in PAIRS["nccl"]])
        browser.save_screenshot(str(SCREENS / "diff-served-ranks.png"))
        assert errors(browser) == []
    assert s.rc == 0, s.stderr
