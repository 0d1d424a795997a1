#!/usr/bin/env python3
"""How the report's Trace view responds on a window of about a million ranges, in Chromium.

Builds (once) a Kineto trace of about 1.04 M ranges with bench/make_big_trace.py (the BERT fixture,
with kernels and args, copied 504 times), writes its report with `tprof report`, opens it in
Debian's headless Chromium (Selenium, as the browser tests do) and measures in the page, with
performance.now(): the page's load (data parsed, first view drawn), the Trace view's first
render (columns to typed arrays, layout, first frame), then for each zoom (x0.8 around 30 % of
the plot's width, as W or Ctrl+wheel do) and pan
(D, +10 %) step from the full window down to about 50 microseconds, the time of the frame's drawing
(draw()) and the time until the browser has painted it (two requestAnimationFrame callbacks
after the step). Prints medians and maxima; speed is never asserted (docs/REPORT.md, BENCHMARKS.md).

Usage: bench/trace_view.py [BUILD] (default: build)
"""
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
SOURCE = ROOT / "tests" / "fixtures" / "kineto" / "gaunernst_bert-small-uncased__1016001.json.gz"

STEP = """
var done = arguments[arguments.length - 1], kind = arguments[0], t = performance.now();
var drawMs = kind === 'zoom' ? window.tprofTrace.zoom(0.8, 0.3) : window.tprofTrace.pan(0.1);
requestAnimationFrame(function () { requestAnimationFrame(function () {
  var s = window.tprofTrace.stats();
  done({draw: drawMs, frame: performance.now() - t, drawn: s.drawn, boxes: s.boxes,
        span: s.v1 - s.v0});
}); });
"""


def browser() -> webdriver.Chrome:
    """Debian's Chromium, headless, as tests/integration/test_report_browser.py starts it."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--window-size=1400,1000",
              "--user-data-dir=" + tempfile.mkdtemp(prefix="tprof-bench-chromium-")]:
        opts.add_argument(a)
    service = Service(executable_path="/usr/bin/chromedriver")
    driver = webdriver.Chrome(service=service, options=opts)
    driver.set_page_load_timeout(600)
    driver.set_script_timeout(600)
    return driver


def summary(name: str, values: list) -> str:
    """The median and maximum of values, in ms."""
    return "%s median %.1f ms, max %.1f ms" % (name, statistics.median(values), max(values))


def main() -> None:
    """Builds the input and the report, then measures the view."""
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build")
    OUT.mkdir(parents=True, exist_ok=True)
    trace, page = OUT / "trace_view_1m.json", OUT / "trace_view_1m.html"
    if not trace.exists():
        subprocess.run([sys.executable, ROOT / "bench" / "make_big_trace.py", "--source", SOURCE,
                        "--mb", "525", trace], check=True)
    t = time.monotonic()
    subprocess.run([build / "tprof", "report", "--no-progress", trace, "-o", page], check=True)
    print("tprof report: %.1f s, page %.1f MB" % (time.monotonic() - t, page.stat().st_size / 1e6))
    driver = browser()
    try:
        t = time.monotonic()
        driver.get(page.resolve().as_uri())
        driver.find_element(By.ID, "fig-steps")
        print("page load (data parsed, overview drawn): %.1f s" % (time.monotonic() - t))
        t = time.monotonic()
        driver.find_element(By.CSS_SELECTOR, "button[data-view=trace]").click()
        s = driver.execute_script("return window.tprofTrace.stats()")
        print("Trace view's first render: %.1f s; %d ranges, %d covered at full zoom-out in %d "
              "boxes, drawn in %.1f ms" % (time.monotonic() - t, s["ranges"], s["drawn"],
                                           s["boxes"], s["ms"]))
        for kind, n in (("zoom", 50), ("pan", 30)):
            steps = [driver.execute_async_script(STEP, kind) for _ in range(n)]
            print("%d %s steps (view %s .. %s ns, %d .. %d ranges in view): %s; %s" % (
                n, kind, "%.0f" % steps[0]["span"], "%.0f" % steps[-1]["span"],
                max(x["drawn"] for x in steps), min(x["drawn"] for x in steps),
                summary("draw", [x["draw"] for x in steps]),
                summary("frame painted", [x["frame"] for x in steps])))
        driver.execute_script("window.tprofTrace.reset()")
        full = [driver.execute_async_script(STEP, "pan") for _ in range(5)]
        print("full window: " + summary("draw", [x["draw"] for x in full]))
    finally:
        driver.quit()
    print("machine: %d cores, load average %s" % (os.cpu_count() or 0,
                                                  open("/proc/loadavg").read().split()[0]))


if __name__ == "__main__":
    main()
