"""The HTML report in a real browser: Debian's Chromium, headless, driven by Selenium through
Debian's chromedriver (both paths given, so Selenium Manager never downloads anything).

For the profiled demo run (the report.html the library wrote) and a GPU fixture (tprof report):
no JavaScript error in the console; the step count, p50, top op and its self time, GPU
utilization and memory peak on the page equal tprof analyze --json; switching tabs, sorting a
table, filtering it and zooming the timeline work; the live page (no embedded data, as tprof
serve sends it) fetches its data and follows a run's new data. Each view's screenshot goes to
build/report-screens/. Skipped, with the reason, only where Chromium or its driver is missing."""

import json
import os
import pathlib
import re
import shutil

import pytest
from cli_helpers import BUILD, FIXTURES, profiled_run, tprof

import tprof_ref

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("Debian's chromium and chromium-driver are not installed (make deps installs them)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver",
                                reason="selenium is not in the venv (make deps)")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

GPU_TRACE = FIXTURES / "kineto" / "gaunernst_bert-small-uncased__1016001.json.gz"
DATA_RE = re.compile(rb'<script id="tprof-data" type="application/json">(.*?)</script>', re.S)
VIEWS = ["overview", "operators", "modules", "kernels", "memory", "timeline", "stacks", "ranks",
         "compare", "artifacts"]
SCREENS = BUILD / "report-screens"


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--disable-component-update",
              "--disable-default-apps", "--disable-extensions", "--disable-sync",
              "--no-first-run", "--metrics-recording-only", "--disable-domain-reliability",
              "--window-size=1400,1000",
              "--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile")]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    return profiled_run(tmp_path_factory.mktemp("runs"), "demo", "--profiling.profile_memory",
                        "true", "--profiling.record_shapes", "true", steps=30)


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "report.html"
    tprof("report", GPU_TRACE, "-o", out, rc=0)
    return out


def analyze(path):
    """tprof analyze --json with the report's rows (TP_HTML_TOP_ROWS)."""
    return json.loads(tprof("analyze", "--json", "--top", "500", path, rc=0).stdout)


def errors(driver):
    """The console's errors since the last call (warnings and info are not failures)."""
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def figure(driver, fid):
    """(exact value, shown text) of a headline figure."""
    e = driver.find_element(By.ID, fid)
    return e.get_attribute("data-v"), e.text


def shown_us(text):
    """A time as the page shows it ("6.46 ms"), in microseconds."""
    m = re.match(r"(-?[0-9.]+) (\u00b5s|ms|s)$", text)
    assert m, text
    return float(m.group(1)) * {"\u00b5s": 1, "ms": 1e3, "s": 1e6}[m.group(2)]


def shown_pct(text):
    """A share as the page shows it ("7.0 %"), rounded to one decimal."""
    assert text.endswith(" %"), text
    return float(text[:-2])


def open_report(driver, path):
    driver.get(pathlib.Path(path).resolve().as_uri())
    driver.find_element(By.ID, "fig-steps")  # rendered
    assert errors(driver) == []


def check_figures(driver, want):
    steps = want["steps"]
    v, t = figure(driver, "fig-steps")
    assert int(v) == steps["count"] and t == str(steps["count"])
    v, t = figure(driver, "fig-p50")
    assert float(v) == steps["p50_us"]
    assert shown_us(t) == pytest.approx(steps["p50_us"], rel=0.01)
    op = want["top_cpu_ops"][0]
    assert figure(driver, "fig-top-op") == (op["name"], op["name"])
    v, t = figure(driver, "fig-top-op-self")
    assert float(v) == op["self_us"]
    assert shown_us(t) == pytest.approx(op["self_us"], rel=0.01)
    util = want["gpu"]["utilization_pct"]
    v, t = figure(driver, "fig-gpu-util")
    if util is None:
        assert v == "" and t == "n/a"
    else:
        assert float(v) == util and shown_pct(t) == pytest.approx(util, abs=0.051)
    peaks = [m["peak_bytes"] for m in want["memory"]]
    v, _ = figure(driver, "fig-mem-peak")
    assert (int(v) if v else None) == (max(peaks) if peaks else None)
    for fig, pct in (("fig-mfu", want["mfu"]["pct"]),
                     ("fig-mfu-fcm", want["flops_fcm"]["mfu_pct"])):
        v, t = figure(driver, fig)
        assert (float(v) if v else None) == pct and (t == "n/a") == (pct is None)


def table_values(driver, table_id, keys):
    """The exact values (data-v) of a table's rows, as strings, in the given columns."""
    heads = [h.get_attribute("data-key") for h in
             driver.find_elements(By.CSS_SELECTOR, "#%s th" % table_id)]
    return [[r.find_elements(By.TAG_NAME, "td")[heads.index(k)].get_attribute("data-v")
             for k in keys]
            for r in driver.find_elements(By.CSS_SELECTOR, "#%s tbody tr" % table_id)]


def as_shown(v):
    """A JSON value as a table cell's data-v holds it (JavaScript's String())."""
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def check_table(driver, view, table_id, keys, want_rows):
    """A table of the page holds exactly the JSON's rows, in its order."""
    driver.find_element(By.CSS_SELECTOR, "button[data-view=%s]" % view).click()
    got = table_values(driver, table_id, keys)
    assert got == [[as_shown(r[k]) for k in keys] for r in want_rows]
    assert got, table_id


def visit_views(driver, name):
    SCREENS.mkdir(parents=True, exist_ok=True)
    for view in VIEWS:
        driver.find_element(By.CSS_SELECTOR, "button[data-view=%s]" % view).click()
        assert driver.find_element(By.ID, "view-" + view).is_displayed()
        for other in VIEWS:
            if other != view:
                assert not driver.find_element(By.ID, "view-" + other).is_displayed()
        driver.save_screenshot(str(SCREENS / ("%s-%s.png" % (name, view))))
        assert errors(driver) == [], view


def check_sorting(driver, want):
    driver.find_element(By.CSS_SELECTOR, "button[data-view=operators]").click()
    header = driver.find_element(By.CSS_SELECTOR, "#ops th[data-key=calls]")

    def column(key):
        idx = [h.get_attribute("data-key") for h in
               driver.find_elements(By.CSS_SELECTOR, "#ops th")].index(key)
        return [c.get_attribute("data-v") for c in
                driver.find_elements(By.CSS_SELECTOR, "#ops tbody tr td:nth-child(%d)" % (idx + 1))]
    # unsorted: the analysis' order (self time, descending)
    assert column("name") == [r["name"] for r in want["top_cpu_ops"]]
    header.click()
    calls = [int(v) for v in column("calls")]
    assert calls == sorted(calls, reverse=True) and len(calls) == len(want["top_cpu_ops"])
    header.click()
    calls = [int(v) for v in column("calls")]
    assert calls == sorted(calls)
    # filter by name
    name = want["top_cpu_ops"][0]["name"]
    box = driver.find_element(By.ID, "ops-filter")
    box.send_keys(name)
    shown = column("name")
    assert name in shown and all(name.lower() in n.lower() for n in shown)
    box.clear()


def check_zoom(driver):
    driver.find_element(By.CSS_SELECTOR, "button[data-view=timeline]").click()
    canvas = driver.find_element(By.ID, "timeline")

    def span():
        return float(canvas.get_attribute("data-v1")) - float(canvas.get_attribute("data-v0"))
    full = span()
    assert full > 0
    driver.find_element(By.ID, "tl-in").click()
    assert span() == pytest.approx(full / 2, rel=1e-6)
    driver.find_element(By.ID, "tl-in").click()
    assert span() == pytest.approx(full / 4, rel=1e-6)
    # the mouse wheel zooms out around the pointer
    driver.execute_script(
        "var c = arguments[0], r = c.getBoundingClientRect();"
        "c.dispatchEvent(new WheelEvent('wheel', {deltaY: 100, clientX: r.left + r.width * 0.6,"
        " clientY: r.top + 10, bubbles: true, cancelable: true}));", canvas)
    assert span() == pytest.approx(full / 4 * 1.25, rel=1e-6)
    driver.find_element(By.ID, "tl-reset").click()
    assert span() == pytest.approx(full, rel=1e-9)
    assert errors(driver) == []


def test_demo_run_report(browser, demo_run):
    page = demo_run / "tprof" / "report.html"
    assert page.exists(), "the library wrote no report.html"
    want = analyze(demo_run)
    open_report(browser, page)
    check_figures(browser, want)
    visit_views(browser, "demo")
    # the artifacts view links the run's files beside the report
    links = {a.text: a.get_attribute("href")
             for a in browser.find_elements(By.CSS_SELECTOR, "#artifacts-table a")}
    assert links["summary.json"] == (demo_run / "tprof" / "summary.json").resolve().as_uri()
    check_table(browser, "memory", "allocs", ["name", "alloc_bytes", "allocs"],
                want["top_ops_by_allocation"])
    check_sorting(browser, want)
    check_zoom(browser)


def test_gpu_fixture_report(browser, gpu_report):
    want = analyze(GPU_TRACE)
    assert want["gpu"]["utilization_pct"] is not None and want["memory"]
    open_report(browser, gpu_report)
    check_figures(browser, want)
    visit_views(browser, "gpu")
    rows = browser.find_elements(By.CSS_SELECTOR, "#kernels tbody tr")
    assert len(rows) == len(want["top_gpu_kernels"])
    check_table(browser, "kernels", "devices",
                ["device", "busy_us", "idle_us", "window_us", "utilization_pct"],
                want["gpu"]["per_device"])
    check_table(browser, "memory", "allocs", ["name", "alloc_bytes", "allocs"],
                want["top_ops_by_allocation"])
    check_sorting(browser, want)
    check_zoom(browser)


def test_docs_screenshot_is_current_view(browser, gpu_report):
    """The README's screenshot is made by this test's browser (copied when TPROF_UPDATE_DOCS=1)."""
    open_report(browser, gpu_report)
    shot = SCREENS / "readme-overview.png"
    SCREENS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10000
    if os.environ.get("TPROF_UPDATE_DOCS") == "1":
        shutil.copy(shot, pathlib.Path(os.environ["TPROF_SOURCE_DIR"]) / "docs" / "report.png")


def test_live_page_fetches_and_follows_the_run(browser, tmp_path):
    """The page without its data element is tprof serve's live page (tp_html_page with no data):
    it lists runs from api/runs, renders api/data?run=NAME, and shows a run's new data within
    2 s without a reload. A stand-in server here serves the two report data documents."""
    import http.server
    import threading
    import time
    import urllib.parse

    small = tmp_path / "small.html"
    tprof("report", GPU_TRACE, "-o", small, rc=0)
    page = small.read_bytes()
    first = DATA_RE.search(page).group(1).replace(b"\\u003c", b"<")
    live_page = DATA_RE.sub(b"", page)
    run = profiled_run(tmp_path / "runs", "grow", steps=20)
    grown = (run / "tprof" / "report.html").read_bytes()
    second = DATA_RE.search(grown).group(1).replace(b"\\u003c", b"<")
    state = {"data": first, "asked": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            if url.path == "/":
                body, kind = live_page, "text/html; charset=utf-8"
            elif url.path == "/api/runs":
                body = (b'{"runs": [{"name": "grow", "windows": 1, "partial": false}], '
                        b'"left_out": 0}')
                kind = "application/json"
            elif url.path == "/api/data":
                state["asked"].append(urllib.parse.parse_qs(url.query).get("run"))
                body, kind = state["data"], "application/json"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        browser.get("http://127.0.0.1:%d/" % server.server_address[1])

        def steps_shown(want, within):
            end = time.monotonic() + within
            while time.monotonic() < end:
                try:
                    els = browser.find_elements(By.ID, "fig-steps")
                    if els and els[0].get_attribute("data-v") == str(want):
                        return True
                except StaleElementReferenceException:  # replaced while the page rendered
                    pass
                time.sleep(0.1)
            return False
        assert steps_shown(json.loads(first)["analysis"]["steps"]["count"], 10)
        assert state["asked"][0] == ["grow"]
        browser.execute_script("window.tprofTestMarker = 42;")
        state["data"] = second
        assert steps_shown(json.loads(second)["analysis"]["steps"]["count"], 2.5)
        assert browser.execute_script("return window.tprofTestMarker;") == 42  # no reload
        assert errors(browser) == []
    finally:
        # away from the live page first: its polls of a server gone would be the next test's
        # console errors
        browser.get("about:blank")
        errors(browser)
        server.shutdown()
        server.server_close()


def test_compare_view(browser, gpu_report, tmp_path):
    # A recorded with stages of its own, B with none: both compared with the default stages,
    # which each side's warnings say
    run = profiled_run(tmp_path, "own", "--profiling.stages", "layers=linear?|relu?", steps=30)
    out = tmp_path / "cmp.html"
    tprof("report", "--compare", run, GPU_TRACE, "-o", out, rc=0)
    want = json.loads(tprof("compare", "--json", "--top", "500", run, GPU_TRACE, rc=0).stdout)
    open_report(browser, out)
    browser.find_element(By.CSS_SELECTOR, "button[data-view=compare]").click()
    v, t = figure(browser, "cmp-change")
    assert float(v) == want["step_change_pct"]
    assert shown_pct(t) == pytest.approx(want["step_change_pct"], abs=0.051)
    assert float(figure(browser, "cmp-a-mean")[0]) == want["a"]["mean_step_us"]
    names = [c.get_attribute("data-v") for c in
             browser.find_elements(By.CSS_SELECTOR, "#cmp-ops tbody tr td:first-child")]
    # regressions first: the largest increase of B over A at the top
    first = sorted(want["ops"], key=lambda r: (-r["delta_us"], r["name"]))
    assert names == [r["name"] for r in first]
    [said] = want["a"]["warnings"]
    assert "were recorded with different stages" in said and want["b"]["warnings"] == [said]
    assert [w.text for w in browser.find_elements(By.CSS_SELECTOR, ".cmp-warn")] == [
        "A, B: " + said]
    browser.save_screenshot(str(SCREENS / "compare.png"))
    assert errors(browser) == []


def test_ranks_view_renders_the_ranks_key(browser, gpu_report, tmp_path):
    """The Ranks view shows the "ranks" key of tprof analyze --json in the shape the ranks/report
    seam gives (branch ranks adds it); here it is written into a report's data by hand."""
    page = gpu_report.read_bytes()
    data = json.loads(DATA_RE.search(page).group(1))
    data["analysis"]["ranks"] = {
        "count": 2,
        "per_rank": [
            {"rank": 0, "steps": 3, "step_mean_ns": 1500000, "step_p95_ns": 1700000,
             "stages_ns": {"forward": 400000}, "compute_ns": 900000,
             "communication_ns": 300000, "idle_ns": 100000},
            {"rank": 1, "steps": 3, "step_mean_ns": 2500000, "step_p95_ns": 2900000,
             "stages_ns": {"forward": 800000}, "compute_ns": 1900000,
             "communication_ns": 200000, "idle_ns": 50000}],
        "step_spread": [{"step": 1, "min_ns": 1400000, "max_ns": 2600000, "slowest_rank": 1}],
        "straggler": {"rank": 1, "last_share": 0.92, "mean_late_ns": 1000000, "wait_share": 0.18}}
    text = json.dumps(data).replace("<", "\\u003c").encode()
    out = tmp_path / "ranks.html"
    out.write_bytes(DATA_RE.sub(lambda m: m.group(0).replace(m.group(1), text), page))
    open_report(browser, out)
    browser.find_element(By.CSS_SELECTOR, "button[data-view=ranks]").click()
    assert figure(browser, "fig-ranks") == ("2", "2")
    assert figure(browser, "fig-straggler")[0] == "1"
    rows = [[c.get_attribute("data-v") for c in r.find_elements(By.TAG_NAME, "td")]
            for r in browser.find_elements(By.CSS_SELECTOR, "#ranks-table tbody tr")]
    assert [r[:3] for r in rows] == [["0", "3", "1500"], ["1", "3", "2500"]]
    assert rows[1][-1] == "800"  # the forward stage, in microseconds
    assert len(browser.find_elements(By.CSS_SELECTOR, "#spread-table tbody tr")) == 1
    browser.save_screenshot(str(SCREENS / "ranks.png"))
    assert errors(browser) == []


TORCH_TRACE = FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz"
TORCH_BY_SHAPE = FIXTURES / "torch2" / "expected" / "cnn_cpu_3steps.key_averages_by_shape.json.gz"


def test_ops_by_input_shape(browser, tmp_path):
    """A trace with shapes (record_shapes): the Operators view's "group by input shape" toggle
    shows top_cpu_ops_by_shape row for row, whose first row is torch's own top row of
    key_averages(group_by_input_shape=True) from the same run (the fixture's expected/ file);
    sorting and filtering work on it; unticked, the op table is back. A trace without shapes
    shows no toggle."""
    import gzip
    out = tmp_path / "shapes.html"
    tprof("report", TORCH_TRACE, "-o", out, rc=0)
    want = analyze(TORCH_TRACE)["top_cpu_ops_by_shape"]
    assert want
    open_report(browser, out)
    browser.find_element(By.CSS_SELECTOR, "button[data-view=operators]").click()
    assert browser.find_element(By.ID, "ops-shape-toggle").is_displayed()
    assert not browser.find_elements(By.ID, "ops-shape")
    browser.find_element(By.ID, "ops-by-shape").click()
    keys = ["name", "input_shapes", "calls", "self_us", "total_us", "mean_us", "max_us",
            "flops", "flops_fcm", "gpu_us", "kernels"]
    got = table_values(browser, "ops-shape", keys)
    assert got == [[as_shown(r[k]) for k in keys] for r in want]
    assert any(r["flops_fcm"] for r in want)  # both conventions' FLOPs, each in its column
    # torch's top row (ProfilerStep* is a step, not an op, in tprof)
    with gzip.open(TORCH_BY_SHAPE, "rt", encoding="utf-8") as f:
        torch_rows = [r for r in json.load(f) if r["key"] != "ProfilerStep*"]
    top = max(torch_rows, key=lambda r: r["self_cpu_us"])
    first = browser.find_elements(By.CSS_SELECTOR, "#ops-shape tbody tr")[0]
    cells = [c.text for c in first.find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == [top["key"], top["input_shapes"], str(top["count"])]
    assert shown_us(cells[3]) == pytest.approx(top["self_cpu_us"], rel=0.01)
    browser.save_screenshot(str(SCREENS / "ops-by-shape.png"))
    # sorting by calls, then filtering by name
    browser.find_element(By.CSS_SELECTOR, "#ops-shape th[data-key=calls]").click()
    calls = [int(r[0]) for r in table_values(browser, "ops-shape", ["calls"])]
    assert calls == sorted(calls, reverse=True) and len(calls) == len(want)
    box = browser.find_element(By.ID, "ops-shape-filter")
    box.send_keys("aten::mm")
    shown = table_values(browser, "ops-shape", ["name", "input_shapes"])
    assert shown and all("aten::mm" in n for n, _ in shown)
    assert len({s for _, s in shown}) > 1  # aten::mm, split by its shapes
    # unticked: the op table by name again
    browser.find_element(By.ID, "ops-by-shape").click()
    top_op = analyze(TORCH_TRACE)["top_cpu_ops"][0]["name"]
    assert table_values(browser, "ops", ["name"])[0] == [top_op]
    assert errors(browser) == []
    # without shapes: no toggle
    plain = tmp_path / "plain.html"
    legacy = FIXTURES / "torch-legacy" / "mlp_cpu_300steps.json.gz"
    tprof("report", legacy, "-o", plain, rc=0)
    assert analyze(legacy)["top_cpu_ops_by_shape"] == []
    open_report(browser, plain)
    browser.find_element(By.CSS_SELECTOR, "button[data-view=operators]").click()
    assert not browser.find_element(By.ID, "ops-shape-toggle").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#ops tbody tr")
    assert errors(browser) == []


MODULE_TRACES = [FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz",
                 FIXTURES / "gpu-h200" / "torch_mlp.tprof.json.gz", GPU_TRACE]
MODULE_KEYS = ["calls", "forward_us", "forward_self_us", "backward_us", "backward_self_us",
               "flops", "gpu_us", "kernels"]


def module_rows(modules, keys):
    """(row id, label, [data-v per key], parent node or None) of the Modules view's rows as the
    JSON says: each node, then its ops (their time under forward or backward by their pass)."""
    rows = []
    for i, n in enumerate(modules["nodes"]):
        rows.append(("mod-%d" % i, n["name"], [as_shown(n[k]) for k in keys], n["parent"]))
        for k, op in enumerate(n["ops"]):
            back = op["pass"] == "backward"
            cells = dict(op, forward_us=None if back else op["total_us"],
                         backward_us=op["total_us"] if back else None)
            rows.append(("mod-%d-op-%d" % (i, k),
                         ("backward: " if back else "") + op["name"],
                         [as_shown(cells.get(k)) for k in keys], i))
    return rows


@pytest.mark.parametrize("trace", MODULE_TRACES, ids=lambda p: p.name)
def test_modules_view(browser, trace, tmp_path):
    """The Modules view (docs/REPORT.md): one row per node of tprof analyze --json's modules,
    depth first, each followed by its ops, every cell's exact value the JSON's, which equals
    tests/lib/tprof_ref.py's tree; the roots open, the rest closed; a toggle opens a module onto
    its ops and child modules and closes its whole subtree; no console error."""
    out = tmp_path / "modules.html"
    tprof("report", trace, "-o", out, rc=0)
    want = analyze(trace)["modules"]
    ref = tprof_ref.modules(str(trace))["nodes"]
    open_report(browser, out)
    browser.find_element(By.CSS_SELECTOR, "button[data-view=modules]").click()
    gpu = any(n["kernels"] for n in want["nodes"])
    keys = [k for k in MODULE_KEYS if gpu or k not in ("gpu_us", "kernels")]
    expected = module_rows(want, keys)
    got = browser.find_elements(By.CSS_SELECTOR, "#modules-table tbody tr")
    assert [r.get_attribute("id") for r in got] == [e[0] for e in expected]
    assert table_values(browser, "modules-table", keys) == [e[2] for e in expected]
    # the independent reference, node by node (its path from the root)
    paths = []
    for n in want["nodes"]:
        paths.append((paths[n["parent"]] if n["parent"] is not None else ()) + (n["name"],))
    assert set(paths) == set(ref)
    for i, p in enumerate(paths):
        cell = browser.find_element(By.CSS_SELECTOR, "#mod-%d td[data-key=forward_us]" % i)
        assert float(cell.get_attribute("data-v")) == ref[p]["forward"] / 1000
        cell = browser.find_element(By.CSS_SELECTOR, "#mod-%d td[data-key=backward_us]" % i)
        assert float(cell.get_attribute("data-v")) == ref[p]["backward"] / 1000
    nodes = want["nodes"]

    def shown():
        return {r.get_attribute("id") for r in got if r.is_displayed()}

    def under(rid, root):  # whether row rid lies in node root's subtree (below root itself)
        parent = {e[0]: e[3] for e in expected}[rid]
        while parent is not None:
            if parent == root:
                return True
            parent = nodes[parent]["parent"]
        return False
    roots = [i for i, n in enumerate(nodes) if n["parent"] is None]
    open_rows = {e[0] for e in expected if e[3] is None or e[3] in roots}
    assert shown() == open_rows
    for r in got:
        if r.get_attribute("id") in open_rows:
            assert r.find_elements(By.TAG_NAME, "td")[0].text.endswith(
                {e[0]: e[1] for e in expected}[r.get_attribute("id")])
    child = next((i for i, n in enumerate(nodes)
                  if n["parent"] in roots and browser.find_elements(By.ID, "mod-toggle-%d" % i)),
                 None)
    if child is not None:
        browser.find_element(By.ID, "mod-toggle-%d" % child).click()
        opened = {e[0] for e in expected if e[3] == child}
        assert opened and shown() == open_rows | opened
    browser.save_screenshot(str(SCREENS / ("modules-%s.png" % trace.name.split(".")[0])))
    browser.find_element(By.ID, "mod-toggle-%d" % roots[0]).click()
    assert not any(under(rid, roots[0]) for rid in shown())
    assert errors(browser) == []



def test_modules_view_in_the_dashboard(browser, tmp_path):
    """tprof serve's live page has the same Modules view: a run whose trace has module ranges
    shows its tree, row for row tprof analyze --json's."""
    import time

    from served import Served, has_serve
    if not has_serve():
        pytest.skip("this tprof was built without libmicrohttpd (no tprof serve)")
    trace = MODULE_TRACES[0]
    (tmp_path / "runs" / "cnn").mkdir(parents=True)
    shutil.copy(trace, tmp_path / "runs" / "cnn" / "trace_0001.json.gz")
    want = analyze(trace)["modules"]
    with Served(tmp_path / "runs") as s:
        browser.get(s.url + "#modules")
        for _ in range(100):
            if browser.find_elements(By.CSS_SELECTOR, "#modules-table tbody tr"):
                break
            time.sleep(0.1)
        got = table_values(browser, "modules-table", ["calls", "forward_us", "backward_us"])
        assert got == [e[2] for e in module_rows(want, ["calls", "forward_us", "backward_us"])]
        assert errors(browser) == []
        browser.save_screenshot(str(SCREENS / "served-modules.png"))
