"""tprof's Python API without PyTorch: ranges in every form, what a session writes, the
configuration's sources and errors, and misuse. Traces are read with Python's json module."""
import json
import os
import re
import threading

import pytest

import tprof
from conftest import inside, ranges, read_json, run_python, run_traces, step_numbers, trace_events
from run_files import artifact


def only_trace(run_dir):
    traces = run_traces(run_dir)
    assert len(traces) == 1, traces
    return trace_events(traces[0])


# ---- ranges ----

def test_range_forms_keep_python_semantics():
    @tprof.range
    def bare(x):
        """bare's doc"""
        return x + 1

    @tprof.range("named")
    def named(*args, **kwargs):
        return args, kwargs

    class Model:
        @tprof.range("Model.forward")
        def forward(self, x):
            return (self, x)

    m = Model()
    assert bare(1) == 2 and bare.__name__ == "bare" and bare.__doc__ == "bare's doc"
    assert bare.range.name == bare.__wrapped__.__qualname__
    assert named(1, k=2) == ((1,), {"k": 2})
    assert m.forward(3) == (m, 3) and Model.forward(m, 4) == (m, 4)
    with tprof.range("ctx") as r:
        assert r.name == "ctx"
    assert tprof.range(7).name == "7"
    with pytest.raises(KeyError):  # exceptions pass through ranges, never swallowed
        with tprof.range("raises"):
            raise KeyError("x")
    with pytest.raises(ZeroDivisionError):
        tprof.range("decorated raises")(lambda: 1 / 0)()
    with pytest.raises(TypeError):
        tprof.range("a", "b")


def test_session_records_ranges_annotations_and_counters(out_dir):
    @tprof.range("decorated")
    def work(i):
        tprof.flops(1000 + i)
        tprof.arg("i", i)
        tprof.arg("tag", "t%d" % i)

    with tprof.profile(output_dir=out_dir, run_id="r", summary=False) as prof:
        assert tprof.is_recording()
        for i in range(3):
            with tprof.range("outer"):
                with tprof.stage("forward"):
                    work(i)
                tprof.counter("loss", 1.5 * i)
            prof.step()
    events = only_trace(os.path.join(out_dir, "r"))
    xs = ranges(events)
    outer = [e for e in xs if e["name"] == "outer"]
    fwd = [e for e in xs if e["name"] == "forward"]
    deco = [e for e in xs if e["name"] == "decorated"]
    assert len(outer) == len(fwd) == len(deco) == 3
    for o, f, d in zip(sorted(outer, key=lambda e: e["ts"]), sorted(fwd, key=lambda e: e["ts"]),
                       sorted(deco, key=lambda e: e["ts"])):
        assert inside(f, o) and inside(d, f)
    assert sorted(d["args"]["flops"] for d in deco) == [1000, 1001, 1002]
    assert sorted((d["args"]["i"], d["args"]["tag"]) for d in deco) == [
        (0, "t0"), (1, "t1"), (2, "t2")]
    counters = [e for e in events if e.get("ph") == "C" and e["name"] == "loss"]
    assert sorted(c["args"]["value"] for c in counters) == [0.0, 1.5, 3.0]
    assert step_numbers(events) == [0, 1, 2, 3]  # the step running at the end is kept too


def test_a_range_open_as_its_window_opens_is_in_it(out_dir):
    """Issue 23: a range begun before its window (an epoch's, around the schedule's wait and
    warmup steps) is in the window, from the window's start to its end and flagged as cut by
    the window ("tprof truncated", as a range still open when its window closes); before, its
    end was skipped and the range missing. torch.profiler drops such a range altogether (its
    RecordFunction began with no callback). A range begun and ended before the window is not in
    it; one begun inside is not flagged."""
    epoch, phase = tprof.range("epoch"), tprof.range("phase")
    with tprof.profile(output_dir=out_dir, run_id="w", summary=False, wait=1, warmup=1,
                       active=3) as prof:
        with tprof.range("before"):
            pass
        epoch.begin()
        phase.begin()
        for i in range(4):
            if i == 3:
                phase.end()
            with tprof.range("batch"):
                pass
            prof.step()
        epoch.end()  # in step 4, the window's last
        prof.step()
    events = only_trace(os.path.join(out_dir, "w"))
    assert step_numbers(events) == [2, 3, 4]
    xs = ranges(events)
    steps = {e["name"]: e for e in xs if e["name"].startswith("ProfilerStep#")}
    named = {name: [e for e in xs if e["name"] == name] for name in
             ("before", "epoch", "phase", "batch")}
    assert not named["before"] and len(named["batch"]) == 2  # steps 2 and 3
    assert not any("args" in b and "tprof truncated" in b["args"] for b in named["batch"])
    (ep,), (ph,) = named["epoch"], named["phase"]
    start = steps["ProfilerStep#2"]["ts"]
    for e, last in ((ep, "ProfilerStep#4"), (ph, "ProfilerStep#3")):
        assert e["args"]["tprof truncated"] is True
        assert abs(e["ts"] - start) < 0.002  # the window's start
        assert inside(e, {"ts": start, "dur": steps[last]["ts"] + steps[last]["dur"] - start})
        assert e["ts"] + e["dur"] > steps[last]["ts"]  # it ended in that step
    assert ph["dur"] < ep["dur"]  # nested as they were


def test_analyze_and_compare_take_the_stages_a_run_was_recorded_with(out_dir):
    """tprof.analyze and tprof.compare given no stages: those of the runs (their config.json),
    so that the analysis' stage table is the run's summary's; runs of other stages are compared
    with the default ones."""
    def run(run_id, **keys):
        with tprof.profile(output_dir=out_dir, run_id=run_id, summary=False, **keys) as prof:
            for _ in range(3):
                with tprof.range("load_batch"):
                    pass
                with tprof.range("forward"):
                    pass
                prof.step()
        return prof

    own = [run("own%d" % i, stages=["io=load_*", "forward"]) for i in range(2)]
    plain = run("plain")
    got = tprof.analyze(own[0])
    assert [s["stage"] for s in got["stages"]] == ["io", "forward"]
    assert got["stages"] == own[0].summary()["stages"]
    assert got["stages"][0]["count"] == 3
    assert tprof.analyze(own[0], stages=["forward"])["stages"][0]["stage"] == "forward"
    assert [r["name"] for r in tprof.compare(own[0], own[1])["stages"]] == ["io", "forward",
                                                                           "other"]
    default = [s["stage"] for s in tprof.analyze(plain)["stages"]]
    assert "io" not in default and "dataloader" in default
    assert [r["name"] for r in tprof.compare(own[0], plain)["stages"]] == default + ["other"]


def test_profile_as_decorator_runs_a_session_per_call(out_dir):
    @tprof.profile(output_dir=out_dir, summary=False)
    def train(n):
        for _ in range(n):
            with tprof.range("body"):
                pass
            tprof.step()
        return n

    assert train(2) == 2 and train(3) == 3
    runs = sorted(os.listdir(out_dir))
    assert len(runs) == 2  # the second run in the same second gets its own directory
    counts = sorted(sum(e["name"] == "body" for e in only_trace(os.path.join(out_dir, r)))
                    for r in runs)
    assert counts == [2, 3]


def test_is_recording_follows_torch_schedule(out_dir):
    torch_profiler = pytest.importorskip("torch.profiler")
    import warnings
    for wait, warmup, active, repeat, skip_first in [(1, 1, 2, 2, 1), (0, 0, 1, 0, 0),
                                                      (2, 1, 3, 1, 4)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = torch_profiler.schedule(wait=wait, warmup=warmup, active=active,
                                            repeat=repeat, skip_first=skip_first)
        want = [sched(k) in (torch_profiler.ProfilerAction.RECORD,
                             torch_profiler.ProfilerAction.RECORD_AND_SAVE) for k in range(20)]
        got = []
        with tprof.profile(output_dir=out_dir, summary=False, wait=wait, warmup=warmup,
                           active=active, repeat=repeat, skip_first=skip_first) as prof:
            for _ in range(20):
                got.append(tprof.is_recording())
                prof.step()
        assert got == want


# ---- configuration ----

def test_bad_values_warn_and_run_unprofiled(out_dir, tmp_path, monkeypatch, capfd, caplog):
    """A configuration error never stops training: one `tprof:` line with the library's message
    (the form of docs/CONFIG.md), as a tprof.ConfigWarning at the caller's line and an ERROR of
    the "tprof" logger, then the run goes on with profiling off."""
    def start_fails(prof, message):
        capfd.readouterr()
        caplog.clear()
        with pytest.warns(tprof.ConfigWarning) as warned:
            prof.start()
        try:
            assert prof.running and not prof.enabled and not tprof.is_recording()
            prof.step()  # the training goes on: no misuse reported, nothing recorded
        finally:
            prof.stop()
        assert re.fullmatch(message, prof.error), prof.error
        line = "tprof: %s; this run goes on unprofiled" % prof.error
        assert [(str(w.message), w.filename) for w in warned] == [(line, __file__)]
        assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == \
            [("tprof", "ERROR", line)]
        assert "tprof:" not in capfd.readouterr().err  # not also on file descriptor 2

    start_fails(tprof.profile(wait=-1, output_dir=out_dir),
                re.escape('invalid value "-1" for profiling.wait (from tprof.profile): '
                          'must be an integer >= 0'))
    start_fails(tprof.profile(wiat=3, output_dir=out_dir),
                r'unknown key profiling\.wiat = "3" \(from tprof\.profile\); see docs/CONFIG\.md')
    monkeypatch.setenv("TPROF_GZIP", "yes please")
    start_fails(tprof.profile(output_dir=out_dir),
                r'.*profiling\.gzip \(from TPROF_GZIP\): must be true or false.*')
    monkeypatch.delenv("TPROF_GZIP")
    bad = tmp_path / "train.yaml"
    bad.write_text("model:\n  layers: 4\nprofiling:\n  wait: -3\n")
    start_fails(tprof.profile(str(bad), output_dir=out_dir),
                r'invalid value "-3" for profiling\.wait \(from ' + re.escape(str(bad))
                + r':4:9\).*')
    start_fails(tprof.profile(epochs=[1, 2], wait=1, output_dir=out_dir),
                r".*profiling\.epochs \(from tprof\.profile\) and profiling\.wait \(from "
                r"tprof\.profile\) cannot be combined.*")
    start_fails(tprof.profile(epoch_steps=3, output_dir=out_dir),
                r".*epoch_steps \(from tprof\.profile\) needs profiling\.epochs.*")
    start_fails(tprof.profile(3.5), r"tprof\.profile\(config\): a tprof\.Config, a dict.*")
    assert not os.path.exists(out_dir)  # nothing written
    with pytest.raises(tprof.ConfigError):  # the Config object itself still raises
        tprof.Config().set("wait", -1)


def test_config_sources_in_order(out_dir, tmp_path, monkeypatch):
    yaml = tmp_path / "p.yaml"
    yaml.write_text("profiling:\n  wait: 5\n  warmup: 4\n  active: 3\n  top_k: 7\n")
    monkeypatch.setenv("TPROF_ACTIVE", "2")
    prof = tprof.profile(str(yaml), warmup=1, output_dir=out_dir, summary=False)
    with prof:
        pass
    got = json.loads(prof.config.to_json())
    # YAML < keyword arguments < environment; enabled=True is tprof.profile's own default
    assert (got["wait"], got["warmup"], got["active"], got["top_k"]) == (5, 1, 2, 7)
    assert got["enabled"] is True
    assert read_json(artifact(prof.run_dir, "config.json")) == got
    # A Config is taken as it is: no environment on top of it.
    cfg = tprof.Config()
    cfg.set("enabled", True)
    cfg.set("epochs", [1, 5, 10])
    cfg.set("stages", ("dataloader", "opt=*sgd*|*adam*"))
    prof = tprof.profile(cfg, output_dir=out_dir, summary=False)
    with prof:
        pass
    got = json.loads(prof.config.to_json())
    assert got["active"] == 1 and got["epochs"] == [1, 5, 10]
    assert got["stages"] == ["dataloader", "opt=*sgd*|*adam*"]
    assert cfg.schedule()["mode"] == "epochs"


def test_environment_switches_a_profiled_script_off(out_dir, monkeypatch):
    monkeypatch.setenv("TPROF_ENABLED", "0")
    before = tprof.messages()
    with tprof.profile(output_dir=out_dir, wait=1, active=2) as prof:
        for _ in range(4):
            with tprof.range("work"):
                tprof.flops(5)
            assert not tprof.is_recording()
            prof.step()
    assert prof.enabled is False and not os.path.exists(out_dir)
    # disabled is not misuse, but keys given to a run that records nothing get one line saying so
    assert tprof.messages() == before + [
        "profiling is off (profiling.enabled is false, from TPROF_ENABLED): profiling.output_dir "
        "(from tprof.profile) and 2 other keys given, nothing will be recorded"]


def test_config_from_args_consumes_like_the_c_side(tmp_path, monkeypatch):
    yaml = tmp_path / "c.yaml"
    yaml.write_text("profiling:\n  warmup: 2\n  wait: 9\n")
    monkeypatch.setenv("TPROF_WAIT", "4")
    argv = ["train.py", "--lr", "0.1", "--profile", "--profiling.active", "3",
            "profiling.repeat=2", "--profiling.config=" + str(yaml), "--profiling.gzip",
            "--epochs", "5", "--", "--profiling.top_k", "3"]
    cfg, rest = tprof.config_from_args(argv)
    assert rest is argv  # consumed in place, like argv in C
    assert argv == ["train.py", "--lr", "0.1", "--epochs", "5", "--", "--profiling.top_k", "3"]
    got = json.loads(cfg.to_json())
    assert (got["enabled"], got["active"], got["repeat"], got["gzip"]) == (True, 3, 2, True)
    assert (got["warmup"], got["wait"], got["top_k"]) == (2, 4, 10)  # YAML < env < argv
    argv = ["p", "--profiling.wait", "-1", "mine", "--profiling.gzip", "maybe"]
    with pytest.raises(tprof.ConfigError, match=r'"-1" for profiling\.wait \(from '
                       r'--profiling\.wait\)'):
        tprof.config_from_args(argv)
    # consumed even so; a boolean key before a value that is no boolean is a flag
    assert argv == ["p", "mine", "maybe"]


# ---- misuse: reported, never a crash ----

MISUSE = r"""
import json, os, sys, threading
import tprof
out = sys.argv[1]
tprof.step()                       # before any profile
tprof.counter("early", 1)
with tprof.range("no session"):    # ranges outside a session cost nothing and say nothing
    pass
with tprof.profile(output_dir=out, run_id="m", summary=False) as prof:
    inner = tprof.profile(output_dir=out, run_id="inner")
    inner.start()                  # nested: ignored, said once
    inner.step()                   # a step of the ignored profile moves nothing
    assert not inner.running
    tprof.range("spare end").end()     # an end with no begin
    tprof.range("left open").__enter__()
    tprof.flops("many")                # bad values: ignored, said once
    tprof.counter("c", "not a number")
    tprof.epoch(-3)
    prof.step()
    inner.stop()
tprof.step()                       # after shutdown
print(json.dumps({"messages": tprof.messages(), "active": tprof._tprof.is_active()}))
"""


def test_misuse_is_reported_not_raised(out_dir):
    r = run_python(MISUSE, args=[out_dir])
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["active"] is False
    err = r.stderr
    for line in ["tprof: tprof_step called before tprof_init; ignored",
                 "tprof: tprof.profile started while another profile is running (ignored)",
                 "tprof: tprof_end without a matching tprof_begin",
                 "tprof: tprof.flops: 'many' is not a 64-bit integer (ignored)",
                 "tprof: tprof.counter: the value is not a number (ignored)",
                 "tprof: tprof.epoch: -3 is not an epoch number (ignored)",
                 '1 range still open at its end was closed there and flagged truncated '
                 '(first: "left open")',
                 "tprof: tprof_step called after tprof_shutdown"]:
        assert line in err, (line, err)
    assert err.count("profiles do not nest") == 1
    events = only_trace(os.path.join(out_dir, "m"))
    left = [e for e in ranges(events) if e["name"] == "left open"]
    assert len(left) == 1 and left[0]["args"].get("tprof truncated") is True
    assert not os.path.exists(os.path.join(out_dir, "inner"))
    assert step_numbers(events) == [0, 1]


def test_threads_recording_at_once(out_dir):
    n_threads, per_thread = 4, 3000
    start = threading.Barrier(n_threads + 1)

    def worker(k):
        tprof.thread_name("worker-%d" % k)
        start.wait()
        for i in range(per_thread):
            with tprof.range("outer-%d" % k):
                with tprof.range("inner"):
                    tprof.counter("progress-%d" % k, i)

    with tprof.profile(output_dir=out_dir, run_id="t", summary=False) as prof:
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        start.wait()
        for _ in range(50):  # the main thread steps while the workers record
            with tprof.range("main"):
                prof.step()
        for t in threads:
            t.join()
    summary = prof.summary()
    assert summary["run"]["dropped_events"] == 0
    events = [e for tr in run_traces(prof.run_dir) for e in trace_events(tr)]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    for k in range(n_threads):
        outer = [e for e in ranges(events) if e["name"] == "outer-%d" % k]
        tids = {e["tid"] for e in outer}
        assert len(tids) == 1 and names[(outer[0]["pid"], outer[0]["tid"])] == "worker-%d" % k
        inner = sorted((e for e in ranges(events) if e["name"] == "inner" and e["tid"] in tids),
                       key=lambda e: e["ts"])
        outer.sort(key=lambda e: e["ts"])
        # every range of every step window was kept, each inner inside its own outer
        assert len(outer) == len(inner) == per_thread
        assert all(inside(i, o) for i, o in zip(inner, outer))
        values = sorted(e["args"]["value"] for e in events
                        if e.get("ph") == "C" and e["name"] == "progress-%d" % k)
        assert values == [float(i) for i in range(per_thread)]


def test_exit_and_interrupt_end_the_session(out_dir):
    """A profile left running is stopped at interpreter exit; Ctrl-C saves the open window as
    partial and KeyboardInterrupt still reaches the program."""
    r = run_python("""
        import sys, tprof
        p = tprof.profile(output_dir=sys.argv[1], run_id="exit", summary=False).start()
        with tprof.range("work"):
            tprof.step()
        """, args=[out_dir])
    assert r.returncode == 0, r.stderr
    summary = read_json(artifact(os.path.join(out_dir, "exit"), "summary.json"))
    assert summary["run"]["windows"] == 1 and summary["steps"]["count"] == 2
    r = run_python("""
        import os, signal, sys, tprof
        try:
            with tprof.profile(output_dir=sys.argv[1], run_id="int", wait=1, active=5,
                               summary=False) as p:
                for i in range(10):
                    with tprof.range("work"):
                        if i == 3:
                            os.kill(os.getpid(), signal.SIGINT)
                    p.step()
        except KeyboardInterrupt:
            print("interrupted at", i)
        """, args=[out_dir])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "interrupted at 3"
    trace = read_json(run_traces(os.path.join(out_dir, "int"))[0])
    assert trace["tprof"]["partial"] is True
    assert step_numbers(trace["traceEvents"]) == [1, 2, 3]


def test_wheel_cupti_folders_are_found(tmp_path, monkeypatch, out_dir):
    from tprof._cupti import wheel_cupti_dirs
    lib = tmp_path / "site" / "nvidia" / "cuda_cupti" / "lib"
    lib.mkdir(parents=True)
    (tmp_path / "other" / "nvidia").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(tmp_path / "other"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert wheel_cupti_dirs().count(str(lib)) == 1
    with tprof.profile(output_dir=out_dir, summary=False):
        with pytest.raises(RuntimeError, match="between sessions"):
            tprof._tprof.set_cupti_dirs([str(lib)])
