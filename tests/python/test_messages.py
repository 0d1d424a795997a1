"""The library's lines in a Python process (tprof._messages, python/ext/py_messages.c): the
summary on sys.stderr, warnings through the "tprof" logger, configuration errors as a
tprof.ConfigWarning too; each once, none lost, none on file descriptor 2 while Python can take
it. A C program still prints to stderr."""
import contextlib
import io
import logging
import os
import subprocess
import threading
import time

import tprof
from conftest import read_json, run_python
from run_files import artifact

BUILD = os.environ.get("TPROF_BUILD_DIR", "build")


def profiled_steps(n=3, **keys):
    with tprof.profile(wait=0, warmup=0, active=n, repeat=1, **keys) as prof:
        for _ in range(n):
            with tprof.stage("forward"):
                pass
            prof.step()
    return prof


def test_summary_goes_to_redirected_stderr(out_dir, capfd):
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        prof = profiled_steps(output_dir=out_dir)
    text = buf.getvalue()
    assert text.startswith("tprof summary: 1 window of %s\n" % prof.run_dir), text
    steps = read_json(artifact(prof.run_dir, "summary.json"))["steps"]["count"]
    assert "  steps: %d, window " % steps in text  # the run's own figure, as summary.json has it
    assert text.endswith("Report: %s\n" % artifact(prof.run_dir, "report.html"))
    assert text.count("tprof summary:") == 1
    assert "tprof" not in capfd.readouterr().err  # not also on file descriptor 2


def test_warnings_reach_the_tprof_logger_once(caplog, capfd):
    caplog.set_level(logging.WARNING, logger="tprof")
    with tprof.profile(summary=False, output_dir=os.devnull + "-never-written", enabled=False):
        pass
    caplog.clear()
    for _ in range(2):
        tprof.flops(-1)  # the library warns once per distinct message
    records = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert records == [("tprof", "WARNING", "tprof: tprof.flops: -1 is negative (ignored)")]
    assert "tprof:" not in capfd.readouterr().err


def test_warning_of_a_python_thread(caplog):
    thread = threading.Thread(target=tprof.counter, args=("c", "not a number"))
    thread.start()
    thread.join()
    assert "tprof: tprof.counter: the value is not a number (ignored)" in \
        [r.getMessage() for r in caplog.records if r.name == "tprof"]


def test_line_of_the_writer_thread_arrives(out_dir, capfd):
    """The flight recorder's note is printed by the library's writer thread, a C thread that
    holds no GIL: it reaches sys.stderr by the interpreter's pending call, while this thread only
    sleeps (no tprof call that would hand it over)."""
    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        with tprof.profile(output_dir=out_dir, flight_recorder=True, flight_steps=4,
                           slow_step_factor=0, summary=False) as prof:
            for _ in range(6):
                prof.step()
            assert tprof.flight_save("manual")
            deadline = time.monotonic() + 30
            while "saved steps" not in buf.getvalue() and time.monotonic() < deadline:
                time.sleep(0.01)
            arrived = buf.getvalue()
    assert arrived == 'tprof: flight save "manual" asked at step 6: saved steps 2-6 to %s\n' \
        % artifact(prof.run_dir, "trace_0001_flight_manual_steps_2-6.json"), arrived
    assert "saved steps" not in capfd.readouterr().err


def test_logging_configuration_and_exit(out_dir):
    """A script's logging configuration formats the warnings; the summary of the session that
    atexit stops still reaches sys.stderr; with no sys.stderr left, it goes to file descriptor 2
    rather than nowhere."""
    for stderr in ("kept", "none"):
        r = run_python("""
            import logging, sys, tprof
            logging.basicConfig(format="%%(levelname)s %%(name)s %%(message)s")
            tprof.flops(-1)
            prof = tprof.profile(output_dir=%r, wait=0, warmup=0, active=1, repeat=1,
                                 run_id=sys.argv[1]).start()
            prof.step()
            if sys.argv[1] == "none":
                sys.stderr = None
        """ % out_dir, args=(stderr,))
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("WARNING tprof tprof: tprof.flops: -1 is negative (ignored)\n") == 1
        assert r.stderr.count("tprof summary: 1 window of %s/%s\n" % (out_dir, stderr)) == 1, \
            r.stderr


def test_configuration_error_outside_pytest(out_dir):
    """Without a logging configuration the must-act line is shown once, as a warning at the
    script's line; a plain warning keeps its "tprof: " line."""
    r = run_python("""
        import tprof
        tprof.profile(wait=-1).start().stop()
        tprof.flops(-2)
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert lines.count("tprof: tprof.flops: -2 is negative (ignored)") == 1
    (warned,) = [line for line in lines if "ConfigWarning" in line]
    assert warned.startswith("<string>:3: ConfigWarning: tprof: invalid value \"-1\" for "
                             "profiling.wait"), warned
    assert r.stderr.count("this run goes on unprofiled") == 1


def test_c_program_still_prints_to_stderr(out_dir):
    r = subprocess.run([os.path.join(BUILD, "examples", "train_mlp"), "--steps", "4", "--profile",
                        "--profiling.output_dir", out_dir, "--profiling.run_id", "c",
                        "--profiling.wait", "1", "--profiling.active", "2",
                        "--profiling.repeat", "1", "--profiling.flops", "maybe"],
                       capture_output=True, text=True, timeout=120)
    assert "tprof: " in r.stderr and "profiling.flops" in r.stderr, r.stderr


def test_c_program_summary_on_stderr(out_dir):
    r = subprocess.run([os.path.join(BUILD, "examples", "train_mlp"), "--steps", "4", "--profile",
                        "--profiling.output_dir", out_dir, "--profiling.run_id", "c",
                        "--profiling.wait", "1", "--profiling.active", "2",
                        "--profiling.repeat", "1"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    run_dir = os.path.join(out_dir, "c")
    assert "tprof summary: 1 window of %s\n" % run_dir in r.stderr


def test_threads_and_sessions_at_once(out_dir):
    """Python threads warning (the GIL held) while the main thread starts and stops sessions
    (lines made under the library's session lock, the GIL released): no deadlock, every line
    arrives once, in each thread's order."""
    got = []

    class Collect(logging.Handler):
        def emit(self, record):
            got.append(record.getMessage())

    handler = Collect()
    logger = logging.getLogger("tprof")
    logger.addHandler(handler)

    def warn(t):
        for n in range(200):
            tprof._tprof.warn("thread %d line %d" % (t, n))

    threads = [threading.Thread(target=warn, args=(t,)) for t in range(4)]
    buf = io.StringIO()
    try:
        with contextlib.redirect_stderr(buf):
            for t in threads:
                t.start()
            for n in range(10):
                profiled_steps(1, output_dir=out_dir, run_id="r%d" % n)
            for t in threads:
                t.join(timeout=120)
            tprof._tprof.deliver_messages()
    finally:
        logger.removeHandler(handler)
    assert not any(t.is_alive() for t in threads)
    for t in range(4):
        mine = [m for m in got if m.startswith("tprof: thread %d " % t)]
        assert mine == ["tprof: thread %d line %d" % (t, n) for n in range(200)]
    assert buf.getvalue().count("tprof summary: 1 window of ") == 10
