"""SIGTERM/SIGINT with a large open window (issue 10, item 3). Before: the flush ran past the
handler's fixed 5 s, the process died mid-write, the trace was lost, a .tmp stayed, nothing was
said. Now the flush writes events in order until profiling.flush_timeout_ms, closes the trace
validly there (marked truncated), says how much was saved, and writes the run's summary files
marked partial, so that tprof check passes and tprof analyze says partial."""

import json
import re
import signal
import subprocess
import time

import pytest
from hostile import HOSTILE, TIMEOUT, clean_env, leftovers, load, tprof, traces

from run_files import files_dir


def killed_run(tmp_path, sig, ranges, *options):
    """tp_hostile records `ranges` ranges in one open window, then gets sig; returns stderr."""
    args = [str(HOSTILE), "big", str(ranges), "--profile", "--profiling.output_dir",
            str(tmp_path), "--profiling.run_id", "run", "--profiling.summary", "false",
            "--profiling.wait", "1", "--profiling.active", "1",
            "--profiling.max_events", "10000000"] + list(options)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env())
    assert proc.stdout.readline() == "ready\n", proc.stderr.read()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -sig, (proc.returncode, err)  # the default action ran after it
    return err


def entries(trace):
    """The trace's events as the recorder's model held them: no metadata, no flow arrows."""
    return [e for e in trace["traceEvents"] if e.get("ph") not in ("M", "s", "f")]


def check_run_is_complete_and_partial(run_dir):
    assert tprof("check", run_dir, rc=0).stdout.decode().startswith(str(run_dir) + ": ok")
    summary = load(files_dir(run_dir) / "summary.json")
    assert summary["run"]["interrupted"] is True
    assert summary["windows"]["partial"] == 1
    assert any("interrupted by a signal" in w for w in summary["warnings"])
    report = json.loads(tprof("analyze", "--json", run_dir, rc=0).stdout)
    assert "1 window closed early (shutdown or signal)" in report["warnings"]
    assert "closed early" in tprof("analyze", run_dir, rc=0).stdout.decode()


def test_sigterm_with_a_large_window_ends_with_a_valid_truncated_trace(tmp_path):
    ranges = 3000000
    err = killed_run(tmp_path, signal.SIGTERM, ranges, "--profiling.flush_timeout_ms", "100")
    run_dir = tmp_path / "run"
    [path] = traces(run_dir)
    trace = load(path)  # valid JSON
    meta = trace["tprof"]
    assert meta["partial"] is True and meta["truncated"] is True
    recorded, written = meta["events_recorded"], meta["events_written"]
    assert recorded == ranges + 1  # the ranges and their step
    assert 0 <= written < recorded
    assert len(entries(trace)) == written
    starts = [e["ts"] for e in entries(trace)]
    assert starts == sorted(starts)  # in order: the earliest events are the ones kept
    m = re.search(r"tprof: window steps_1-1: profiling.flush_timeout_ms ran out: "
                  r"(\d+) of (\d+) events saved", err)
    assert m and (int(m.group(1)), int(m.group(2))) == (written, recorded), err
    assert leftovers(tmp_path) == []
    check_run_is_complete_and_partial(run_dir)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_writes_the_summary_files_marked_partial(tmp_path, sig):
    err = killed_run(tmp_path, sig, 2000)
    run_dir = tmp_path / "run"
    [path] = traces(run_dir)
    meta = load(path)["tprof"]
    assert meta["partial"] is True and "truncated" not in meta  # it had the time it needed
    assert "events saved" not in err
    for name in ("summary.json", "stage_times.json", "op_stats.csv"):
        assert (files_dir(run_dir) / name).is_file(), name
    ops = (files_dir(run_dir) / "op_stats.csv").read_text().splitlines()
    assert ops[1].startswith("op,2000,")  # every recorded range is counted
    assert leftovers(tmp_path) == []
    check_run_is_complete_and_partial(run_dir)


# ---- a signal while tprof_shutdown writes the last window (issue 22, finding 2) ----

def signal_during_shutdown(tmp_path, sig, *options, env=None):
    """tp_hostile records one large window, then gets sig once tprof_shutdown began; returns
    (exit status, stdout after "shutdown", stderr)."""
    args = [str(HOSTILE), "ending", "3000000", "--profile", "--profiling.output_dir",
            str(tmp_path), "--profiling.run_id", "run", "--profiling.summary", "false",
            "--profiling.max_events", "10000000"] + list(options)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=clean_env(**(env or {})))
    assert proc.stdout.readline() == "shutdown\n", proc.stderr.read()
    time.sleep(0.2)  # into the trace's writing, which takes seconds
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


def check_saved(tmp_path, err):
    run_dir = tmp_path / "run"
    [path] = traces(run_dir)
    trace = load(path)  # valid JSON, whole or cut cleanly
    assert "during tprof_shutdown" in err, err
    assert leftovers(tmp_path) == []
    assert tprof("check", run_dir, rc=0).returncode == 0
    return trace


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("schedule", [[], ["--profiling.wait", "1", "--profiling.active", "5"]])
def test_signal_during_shutdown_saves_the_last_window_then_takes_its_course(tmp_path, sig,
                                                                             schedule):
    rc, out, err = signal_during_shutdown(tmp_path, sig, "--profiling.flush_timeout_ms", "100",
                                          *schedule)
    assert rc == -sig, (rc, err)  # the default action, after the files
    assert out == ""  # tprof_shutdown never returned: the signal ended the process
    trace = check_saved(tmp_path, err)
    # cut at the deadline, or (a fast machine) written whole before the signal came; the cut
    # itself, with a deadline set while writing, is test_export_chrome's
    truncated = trace["tprof"].get("truncated") is True
    assert truncated or len(entries(trace)) >= 3000000, trace["tprof"]
    assert ("events saved" in err) == truncated, err


def test_signal_during_shutdown_reaches_the_hosts_handler_after_the_files(tmp_path):
    rc, out, err = signal_during_shutdown(tmp_path, signal.SIGTERM,
                                          env={"TP_HOSTILE_HANDLER": "1"})
    assert rc == 3 and out == "host handler\n", (rc, out, err)
    check_saved(tmp_path, err)  # within the default 5 s: whole
