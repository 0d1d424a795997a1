"""The report's "Call stacks" view in Chromium (as tests/integration/test_report_browser.py drives
it): on real with_stack traces, every frame the flame graph draws is as wide as its total time,
and that time equals the independent reference (tests/lib/stacks_ref.py, the raw trace read by
Python's json module); clicking a frame zooms to it; the callers table holds the JSON's callers;
no console error."""

import json
import re

import pytest
from cli_helpers import FIXTURES, tprof

import stacks_ref
import tprof_ref

pytest.importorskip("selenium.webdriver", reason="selenium is not in the venv (make deps)")
from selenium.webdriver.common.by import By  # noqa: E402
from test_report_browser import SCREENS, browser, errors  # noqa: E402, F401 (the fixture)

DATA_RE = re.compile(rb'<script id="tprof-data" type="application/json">(.*?)</script>', re.S)
TRACES = ["torch2/cnn_cpu_3steps.pt.trace.json.gz",
          "kineto/gaunernst_bert-small-uncased__1016001.json.gz"]


def subtree_ns(ref):
    """{path: Σ self time of the path and every path below it} from the reference."""
    total = {}
    for path, ns in ref.self_ns.items():
        for k in range(1, len(path) + 1):
            total[path[:k]] = total.get(path[:k], 0) + ns
    return total


def frames(driver):
    """(node, total, left px, width px) of every frame drawn."""
    return [(int(e.get_attribute("data-node")), int(e.get_attribute("data-total")),
             e.rect["x"], e.rect["width"])
            for e in driver.find_elements(By.CSS_SELECTOR, "#flame .flame-frame")]


@pytest.mark.parametrize("name", TRACES)
def test_flame_graph_equals_reference(browser, tmp_path, name):  # noqa: F811
    path = FIXTURES / name
    out = tmp_path / "report.html"
    tprof("report", path, "-o", out, rc=0)
    data = json.loads(DATA_RE.search(out.read_bytes()).group(1))
    flame = data["flame"]
    nodes = flame["nodes"]
    paths = []
    for parent, frame, *_ in nodes:
        paths.append((paths[parent] if parent >= 0 else ()) + (frame,))
    want = subtree_ns(stacks_ref.compute(tprof_ref.load(str(path))))
    assert all(want[p] == n[2] for p, n in zip(paths, nodes))
    assert flame["total_ns"] == sum(n[2] for n in nodes if n[0] < 0)

    browser.get(out.resolve().as_uri() + "#stacks")
    assert browser.find_element(By.ID, "view-stacks").is_displayed()
    width = browser.execute_script("return document.getElementById('flame').clientWidth")
    drawn = frames(browser)
    assert len(drawn) >= 20
    for node, total, _left, w in drawn:
        assert total == nodes[node][2]
        assert w == pytest.approx(width * total / flame["total_ns"], abs=1.5)
    # the frames narrower than a pixel (at the width they were drawn for) are the ones left out
    px = int(browser.find_element(By.ID, "flame").get_attribute("data-px"))
    assert {d[0] for d in drawn} == {i for i, n in enumerate(nodes)
                                     if n[2] / flame["total_ns"] * px >= 1
                                     and all(nodes[j][2] / flame["total_ns"] * px >= 1
                                             for j in ancestors(nodes, i))}
    SCREENS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENS / ("stacks-%s.png" % path.name.split(".")[0])))

    # zoom: a deep frame fills the width; its ancestors stay above it, full width
    target = max((d for d in drawn if nodes[d[0]][0] >= 0), key=lambda d: (len(paths[d[0]]), d[1]))
    click(browser, browser.find_element(By.CSS_SELECTOR, '#flame [data-node="%d"]' % target[0]))
    zoomed = {d[0]: d for d in frames(browser)}
    for j in list(ancestors(nodes, target[0])) + [target[0]]:
        assert zoomed[j][3] == pytest.approx(width, abs=1.5)
    assert nodes[target[0]][1][:20] in browser.find_element(By.ID, "flame-info").text
    click(browser, browser.find_element(By.ID, "flame-reset"))
    assert len(frames(browser)) == len(drawn)

    # the callers table: one row per caller the JSON lists
    cs = data["analysis"]["call_stacks"]
    rows = browser.find_elements(By.CSS_SELECTOR, "#callers-table tbody tr")
    assert len(rows) == sum(len(r["callers"]) for k in ("ops", "kernels") for r in cs[k]) > 0
    assert errors(browser) == []


def click(driver, element):
    """A click on element, scrolled to the middle of the window (the tabs' bar stays on top)."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def ancestors(nodes, i):
    j = nodes[i][0]
    while j >= 0:
        yield j
        j = nodes[j][0]


def test_no_stacks_says_so(browser, tmp_path):  # noqa: F811
    out = tmp_path / "report.html"
    tprof("report", FIXTURES / "kineto" / "nccl_data.json.gz", "-o", out, rc=0)
    assert b'"flame"' not in DATA_RE.search(out.read_bytes()).group(1)
    browser.get(out.resolve().as_uri() + "#stacks")
    text = browser.find_element(By.ID, "stacks").text
    assert "No call stacks" in text and "with_stack=True" in text
    assert errors(browser) == []
