"""The report's Trace view (src/report/html/trace.js, src/report/trace_view.c) in a real browser:
Debian's Chromium, headless, through Debian's chromedriver, as test_report_browser.py drives it.

On a Kineto trace with kernels (tprof report): the lanes are the trace's threads and streams;
at full zoom-out the ranges the view covers equal the ranges of the trace, counted here from its
JSON (every "X" event but Kineto's own "Trace" span); after zooming with W and panning with D the
view's range changes as the keys say and the count still equals the trace's ranges overlapping
the view, and a drag pans by the time under the pointer's move; a click on a kernel shows its
args as the trace has them (every one: grid, block, registers...) and links the launch of its
correlation id. On two ranks' traces
read together, each rank has lanes of its own. Skipped, with the reason, only where Chromium or
its driver is missing."""

import gzip
import json
import os
import pathlib
import time

import pytest
from cli_helpers import FIXTURES, tprof

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip("Debian's chromium and chromium-driver are not installed (make deps installs them)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver",
                                reason="selenium is not in the venv (make deps)")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

GPU_TRACE = FIXTURES / "kineto" / "gaunernst_bert-small-uncased__1016001.json.gz"
RANKS = [FIXTURES / "kineto" / ("sampled_rank-%d.json.gz" % r) for r in (0, 1)]


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--disable-background-networking", "--disable-component-update",
              "--disable-default-apps", "--disable-extensions", "--disable-sync",
              "--no-first-run", "--window-size=1400,1000",
              "--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile")]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def ranges_of(path: pathlib.Path) -> list:
    """The trace's ranges as tprof's reader keeps them: "X" events but the profiler's own span."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") != "Trace"]


def errors(driver) -> list:
    return [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def open_trace(driver, path: pathlib.Path) -> None:
    driver.get(path.resolve().as_uri())
    driver.find_element(By.CSS_SELECTOR, "button[data-view=trace]").click()
    driver.find_element(By.ID, "trace-canvas")
    assert errors(driver) == []


def stats(driver) -> dict:
    """What the view drew, once the frame the last input asked for is drawn."""
    return driver.execute_async_script(
        "var done = arguments[0]; requestAnimationFrame(function () {"
        " requestAnimationFrame(function () { done(window.tprofTrace.stats()); }); });")


def in_view(ranges: list, t0_us: float, v0_ns: float, v1_ns: float) -> int:
    """The ranges overlapping [v0, v1] (ns from t0), counted from the trace's own times."""
    n = 0
    for e in ranges:
        s = (e["ts"] - t0_us) * 1e3
        if s <= v1_ns and s + max(e.get("dur", 0), 0) * 1e3 >= v0_ns:
            n += 1
    return n


@pytest.fixture(scope="module")
def gpu_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("trace") / "report.html"
    tprof("report", GPU_TRACE, "-o", out, rc=0)
    return out


def test_every_range_on_its_lane(browser, gpu_page):
    ranges = ranges_of(GPU_TRACE)
    open_trace(browser, gpu_page)
    s = stats(browser)
    assert s["ranges"] == len(ranges)
    assert s["drawn"] == len(ranges)  # full zoom-out: every range, alone or merged
    assert s["boxes"] > 0
    lanes = browser.execute_script("return JSON.parse(document.getElementById('tprof-data')"
                                   ".textContent).trace.lanes")
    threads = {(str(e["pid"]), str(e["tid"])) for e in ranges}
    assert len(lanes) == len(threads)
    gpu = {(str(e["pid"]), str(e["tid"])) for e in ranges
           if e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")}
    assert sum(1 for la in lanes if la["gpu"]) == len(gpu)
    assert all(la["name"].startswith("GPU ") == la["gpu"] for la in lanes)


def test_zoom_and_pan_keys(browser, gpu_page):
    ranges = ranges_of(GPU_TRACE)
    t0_us = min(e["ts"] for e in ranges)
    open_trace(browser, gpu_page)
    full = stats(browser)
    canvas = browser.find_element(By.ID, "trace-canvas")
    ActionChains(browser).move_to_element(canvas).send_keys("wwwww").perform()
    zoomed = stats(browser)
    assert zoomed["v1"] - zoomed["v0"] == pytest.approx((full["v1"] - full["v0"]) * 0.8 ** 5)
    assert zoomed["drawn"] < full["drawn"]
    assert zoomed["drawn"] == in_view(ranges, t0_us, zoomed["v0"], zoomed["v1"])
    ActionChains(browser).send_keys("dd").perform()
    panned = stats(browser)
    width = zoomed["v1"] - zoomed["v0"]
    assert panned["v0"] == pytest.approx(zoomed["v0"] + 0.2 * width)
    assert panned["v1"] - panned["v0"] == pytest.approx(width)
    assert panned["drawn"] == in_view(ranges, t0_us, panned["v0"], panned["v1"])
    assert float(canvas.get_attribute("data-v0")) == pytest.approx(panned["v0"])
    # dragging 200 px to the right moves the view 200 px' worth of time earlier
    plot_w = canvas.size["width"] - 230  # LABEL_W of trace.js
    ActionChains(browser).move_to_element(canvas).click_and_hold().move_by_offset(100, 0) \
        .move_by_offset(100, 0).release().perform()
    dragged = stats(browser)
    assert dragged["v0"] == pytest.approx(panned["v0"] - 200 / plot_w * width, rel=1e-3)
    assert dragged["selected"] == -1  # a drag is not a click
    browser.find_element(By.ID, "trace-reset").click()
    assert stats(browser)["drawn"] == len(ranges)
    assert errors(browser) == []


def shown_equals(shown: str, value) -> bool:
    """A value as the args table shows it: a string as is, anything else as JSON."""
    return shown == value if isinstance(value, str) else json.loads(shown) == value


def shown_args(driver) -> dict:
    """The args table of the selected range: key -> the value as shown."""
    rows = driver.find_elements(By.CSS_SELECTOR, "#trace-args tr[data-key]")
    return {r.get_attribute("data-key"):
            r.find_elements(By.TAG_NAME, "td")[1].get_attribute("data-v") for r in rows}


def test_op_shapes_and_its_kernels(browser, gpu_page):
    """An op's shapes and dtypes as the trace wrote them, and its kernels by External id."""
    ranges = ranges_of(GPU_TRACE)
    op = next(e for e in ranges if e["cat"] == "cpu_op" and e["name"] == "aten::addmm"
              and e["args"].get("Input Dims"))
    ext = op["args"]["External id"]
    kernels = {e["name"] for e in ranges if e["cat"] == "kernel"
               and e["args"].get("External id") == ext}
    assert kernels
    open_trace(browser, gpu_page)
    i = browser.execute_script(
        "var t = JSON.parse(document.getElementById('tprof-data').textContent).trace;"
        "for (var i = 0; i < t.ranges; i++) if (t.ext[i] === arguments[0] &&"
        " t.names[t.name[i]] === arguments[1]) return i; return -1;", ext, op["name"])
    browser.execute_script("window.tprofTrace.select(arguments[0])", i)
    rows = shown_args(browser)
    for k in ("External id", "Input Dims", "Input type"):
        assert shown_equals(rows[k], op["args"][k]), k
    links = [a.text.split(" (")[0]
             for a in browser.find_elements(By.CSS_SELECTOR, "#trace-links a")]
    assert kernels <= set(links)


def test_click_shows_args_and_launch(browser, gpu_page):
    ranges = ranges_of(GPU_TRACE)
    kernel = max((e for e in ranges if e["cat"] == "kernel"), key=lambda e: e["dur"])
    launch = [e for e in ranges if e["cat"] in ("cuda_runtime", "cuda_driver")
              and e["args"].get("correlation") == kernel["args"]["correlation"]]
    assert len(launch) == 1
    open_trace(browser, gpu_page)
    i = browser.execute_script(
        "var t = JSON.parse(document.getElementById('tprof-data').textContent).trace;"
        "for (var i = 0; i < t.ranges; i++) if (t.corr[i] === arguments[0] &&"
        " t.names[t.name[i]] === arguments[1]) return i; return -1;",
        kernel["args"]["correlation"], kernel["name"])
    assert i >= 0
    # brought into view (focus selects it too), then deselected: the real click selects it
    browser.execute_script("window.tprofTrace.focus(arguments[0]); window.tprofTrace.select(-1)", i)
    assert stats(browser)["selected"] == -1
    box = browser.execute_script("return window.tprofTrace.boxOf(arguments[0])", i)
    canvas = browser.find_element(By.ID, "trace-canvas")
    ActionChains(browser).move_to_element_with_offset(
        canvas, int(box["x"] - canvas.size["width"] / 2),
        int(box["y"] - canvas.size["height"] / 2)).click().perform()
    assert stats(browser)["selected"] == i
    rows = shown_args(browser)
    # every arg of the kernel as the trace wrote it (docs/REPORT.md, "Trace view"): its grid,
    # block, registers and shared memory too, not only what the analysis reads
    assert set(rows) == set(kernel["args"])
    assert {"grid", "block", "registers per thread", "shared memory"} <= set(rows)
    for k, v in rows.items():
        assert shown_equals(v, kernel["args"][k]), k
    links = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#trace-links a")]
    assert any(t.startswith(launch[0]["name"] + " (") for t in links), links
    assert errors(browser) == []


def test_ranks_have_lanes_of_their_own(browser, tmp_path):
    out = tmp_path / "ranks.html"
    tprof("report", "--together", *RANKS, "-o", out, rc=0)
    open_trace(browser, out)
    lanes = browser.execute_script("return JSON.parse(document.getElementById('tprof-data')"
                                   ".textContent).trace.lanes")
    total = sum(len(ranges_of(p)) for p in RANKS)
    assert stats(browser)["drawn"] == total
    for r, path in enumerate(RANKS):
        threads = {(str(e["pid"]), str(e["tid"])) for e in ranges_of(path)}
        assert sum(1 for la in lanes if la["name"].startswith("rank %d / " % r)) == len(threads)


def test_served_trace_view(browser, tmp_path):
    """tprof serve's dashboard: the Trace tab asks api/trace once for the open run (not with the
    data it polls every second), and draws every range of the run's trace, counted from its
    JSON; a click shows a kernel's args as in the report. Asked again only by its button."""
    from served import Served, has_serve
    if not has_serve():
        pytest.skip("tprof built without libmicrohttpd")
    (tmp_path / "gpu").mkdir()
    trace = tmp_path / "gpu" / "trace_0001.json.gz"
    trace.write_bytes(GPU_TRACE.read_bytes())
    ranges = ranges_of(GPU_TRACE)
    with Served(tmp_path) as s:
        browser.get(s.url)
        browser.execute_script(
            "window.tprofAsked = [];"
            "var f = window.fetch; window.fetch = function (u, o) {"
            " window.tprofAsked.push(String(u)); return f.call(window, u, o); };")
        browser.find_element(By.CSS_SELECTOR, "button[data-view=trace]").click()
        deadline = time.monotonic() + 30  # the data, then the ranges, arrive
        while not browser.find_elements(By.ID, "trace-canvas") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert stats(browser)["drawn"] == len(ranges)
        time.sleep(2.5)  # two more polls of the data: the ranges are not asked again
        asked = browser.execute_script("return window.tprofAsked")
        assert sum("api/trace?run=gpu" in u for u in asked) == 1, asked
        assert sum("api/data?run=gpu" in u for u in asked) >= 2, asked
        assert stats(browser)["drawn"] == len(ranges)
        kernel = max((e for e in ranges if e["cat"] == "kernel"), key=lambda e: e["dur"])
        i = browser.execute_script(
            "var c = arguments[0], n = arguments[1];"
            "return fetch('api/trace?run=gpu').then(function (r) { return r.json(); })"
            ".then(function (d) { var t = d.trace; for (var i = 0; i < t.ranges; i++)"
            " if (t.corr[i] === c && t.names[t.name[i]] === n) return i; return -1; });",
            kernel["args"]["correlation"], kernel["name"])
        assert i >= 0
        browser.execute_script("window.tprofTrace.select(arguments[0])", i)
        rows = shown_args(browser)
        assert set(rows) == set(kernel["args"])
        for k, v in rows.items():
            assert shown_equals(v, kernel["args"][k]), k
        n = len(browser.execute_script("return window.tprofAsked"))
        browser.find_element(By.ID, "trace-reload").click()
        time.sleep(1.0)
        asked = browser.execute_script("return window.tprofAsked")[n:]
        assert sum("api/trace?run=gpu" in u for u in asked) == 1, asked
        assert stats(browser)["drawn"] == len(ranges)
        assert errors(browser) == []
