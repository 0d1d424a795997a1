"""Hostile configuration (issue 10, items 1, 13, 14, 15, 16): what a profiled program and
`import tprof` do with a run_id that would leave output_dir, values that are huge or hold NULs,
a TPROF_CONFIG that names something other than a regular file, and YAML nested 100,000 deep.

Each case runs the example training loop (tprof_init) or a fresh Python interpreter with a time
limit: the promise is one `tprof:` line, nothing written outside output_dir, no wait and no
crash; a training program runs on unprofiled."""
import ctypes
import json
import os
import pathlib
import subprocess
import sys
import textwrap
import time

import pytest

BUILD = pathlib.Path(os.environ["TPROF_BUILD_DIR"])
TRAIN = BUILD / "examples" / "train_mlp"
PYTHON = os.environ.get("TPROF_PYTHON", sys.executable)
TIMEOUT = 60


def train(tmp_path, *args, env=None, timeout=TIMEOUT):
    """The example loop, profiled into tmp_path/out, run from tmp_path; (exit code, stderr)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    full_env.update({"TPROF_OUTPUT_DIR": str(tmp_path / "out"), "TPROF_SUMMARY": "0"})
    full_env.update(env or {})
    p = subprocess.run([str(TRAIN), "--steps", "4", "--epochs", "1", "--batch", "8"] + list(args),
                       capture_output=True, timeout=timeout, env=full_env, cwd=tmp_path)
    assert p.returncode >= 0, "killed by signal %d" % -p.returncode
    return p.returncode, p.stderr.decode("utf-8", errors="replace")


def one_tprof_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("tprof: ")]
    assert len(lines) == 1, stderr
    return lines[0]


def files_outside(tmp_path):
    """What a run wrote next to out/ (the folder above output_dir) or above tmp_path."""
    return sorted(p.name for p in tmp_path.iterdir() if p.name not in ("out", "cfg.yaml"))


@pytest.mark.parametrize("run_id", [".", "..", "a/../..", ""])
@pytest.mark.parametrize("source", ["env", "cli", "hydra", "yaml"])
def test_run_id_leaving_output_dir_is_refused(tmp_path, run_id, source):
    (tmp_path / "out").mkdir()
    args, env = ["--profile"], {}
    if source == "env":
        env["TPROF_RUN_ID"] = run_id or "/"  # an empty variable counts as unset
    elif source == "cli":
        args += ["--profiling.run_id", run_id]
    elif source == "hydra":
        args += ["profiling.run_id=" + run_id]
    else:
        (tmp_path / "cfg.yaml").write_text("profiling:\n  run_id: %s\n" % json.dumps(run_id))
        env["TPROF_CONFIG"] = str(tmp_path / "cfg.yaml")
    rc, stderr = train(tmp_path, *args, env=env)
    line = one_tprof_line(stderr)
    assert rc == 2 and "profiling.run_id" in line and "one plain path component" in line, line
    assert files_outside(tmp_path) == []
    assert list((tmp_path / "out").iterdir()) == []


def test_error_lines_cap_echoed_values(tmp_path):
    huge = "9" * 100000
    rc, stderr = train(tmp_path, env={"TPROF_WAIT": "-" + huge})
    line = one_tprof_line(stderr)
    assert rc == 2 and len(line) < 300 and '-999...", ' not in line and '..." for' in line, line
    rc, stderr = train(tmp_path, "--profiling.w" + "x" * 100000, "1")
    line = one_tprof_line(stderr)
    assert rc == 2 and len(line) < 400 and line.startswith("tprof: unknown key"), line


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_config_file_must_be_regular(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)  # nobody writes: opening it to read would wait forever
        want = "is not a regular file"
    elif kind == "directory":
        path, want = tmp_path, "is a directory"
    else:
        path, want = pathlib.Path("/dev/zero"), "is not a regular file"
    start = time.monotonic()
    rc, stderr = train(tmp_path, env={"TPROF_CONFIG": str(path)}, timeout=20)
    assert time.monotonic() - start < 15
    assert rc == 2
    assert one_tprof_line(stderr) == "tprof: cannot read config file %s: %s" % (path, want)


def test_deep_yaml_stops_at_once(tmp_path):
    depth = 100000
    (tmp_path / "cfg.yaml").write_text("profiling: {wait: 1}\nmodel: " + "[" * depth + "]" * depth
                                       + "\n")
    start = time.monotonic()
    rc, stderr = train(tmp_path, env={"TPROF_CONFIG": str(tmp_path / "cfg.yaml")})
    took = time.monotonic() - start
    line = one_tprof_line(stderr)
    assert rc == 2 and "cfg.yaml:2:263: nested deeper than 256 levels" in line, line
    assert took < 10, took  # the whole program; the 19 s of a document tree would not pass


# error(fn): what calling fn raised, as "Type: message", or "no error"; every script below has it
ERROR_OF = """
def error(fn):
    try:
        fn()
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    return "no error"
"""


def python(code):
    """Runs code in a fresh interpreter (tprof importable) after ERROR_OF; its stdout."""
    if os.environ.get("TPROF_SANITIZE") == "1":
        # the extension of a sanitizer build needs ASan's runtime loaded before the interpreter
        pytest.skip("the Python extension is not loaded in a sanitizer build (make sanitize)")
    p = subprocess.run([PYTHON, "-c", ERROR_OF + textwrap.dedent(code)], capture_output=True,
                       timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return p.stdout.decode()


def test_python_nul_type_and_bytes_paths():
    out = python(r"""
        import json, pathlib, tprof
        from tprof import _tprof


        c = _tprof.Config()
        print(error(lambda: c.set("run_id", "a\0b")))
        print(error(lambda: c.set("output_dir", "/tmp/x\0y")))
        print(error(lambda: c.set("output_dir", b"/tmp/x\0y")))
        print(error(lambda: tprof.range("step\0evil")))
        print(error(lambda: c.set("wait", {"a": 1})))
        print(error(lambda: c.set("stages", ["a", object()])))
        print(error(lambda: c.set("run_id", "..")))
        print(error(lambda: c.set("wait", "-1", "s" * 1000000)))  # a source that long, too
        c.set("output_dir", b"/tmp/bytes")
        c.set("config", pathlib.Path("/tmp/p.yaml"))
        c.set("run_id", b"r\xff")  # not UTF-8: the bytes a file name has
        d = json.loads(c.to_json())
        print(d["output_dir"], d["config"])
    """).splitlines()
    assert out[0] == "ValueError: profiling.run_id (from tprof.Config.set) holds a NUL character"
    assert out[1] == ("ValueError: profiling.output_dir (from tprof.Config.set) holds a NUL "
                      "character")
    assert out[2] == out[1]
    assert out[3].startswith("ValueError: tprof.range: the name 'step\\x00evil' holds a NUL")
    assert out[4].startswith("TypeError: profiling.wait (from tprof.Config.set) must be a bool")
    assert out[4].endswith("not dict")
    assert out[5].startswith("TypeError: profiling.stages") and out[5].endswith("not object")
    assert out[6].startswith("ConfigError: invalid value \"..\" for profiling.run_id")
    assert out[7].startswith("ConfigError: invalid value \"-1\" for profiling.wait (from sss")
    assert out[7].endswith("s...): must be an integer >= 0") and len(out[7]) < 200
    assert out[8] == "/tmp/bytes /tmp/p.yaml"


def test_python_profile_names_the_argument(tmp_path):
    # tprof.profile never stops a training run over a configuration value: the error is one
    # tprof: line, kept in prof.error, and the run goes on unprofiled (docs/PYTHON.md); a model
    # that is no module is a programming error and raises TypeError naming the argument
    out = python(r"""
        import tprof
        for kwargs in ({"wait": [1, {}]}, {"output_dir": 3.5j},
                       {"output_dir": %r, "run_id": "x\0"}):
            prof = tprof.profile(**kwargs)
            prof.start()
            print(prof.error, prof.enabled)
            prof.stop()
        try:
            tprof.profile(model=5)
        except TypeError as e:
            print(e)
    """ % os.fsencode(tmp_path)).splitlines()
    assert out[0].startswith("profiling.wait (from tprof.profile) must be a bool"), out
    assert out[0].endswith(" False"), out
    assert out[1].startswith("profiling.output_dir (from tprof.profile)") and "complex" in out[1]
    assert out[2] == "profiling.run_id (from tprof.profile) holds a NUL character False", out
    assert out[3] == "tprof.profile(model=...) takes a torch.nn.Module, not int", out


# ---- issue 22, findings 16, 17, 18 ----

def test_config_error_is_empty_without_an_error():
    """Before: "out of memory" on a fresh configuration and after successful calls."""
    if os.environ.get("TPROF_SANITIZE") == "1":
        # an instrumented libtprof.so cannot load into an uninstrumented Python
        pytest.skip("ctypes and a sanitizer build")
    lib = ctypes.CDLL(str(BUILD / "lib" / "libtprof.so"))
    lib.tprof_config_new.restype = ctypes.c_void_p
    lib.tprof_config_error.restype = ctypes.c_char_p
    lib.tprof_config_error.argtypes = [ctypes.c_void_p]
    lib.tprof_config_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
    lib.tprof_config_free.argtypes = [ctypes.c_void_p]
    cfg = lib.tprof_config_new()
    assert lib.tprof_config_error(cfg) == b""
    assert lib.tprof_config_set(cfg, b"wait", b"x") == -1
    assert lib.tprof_config_error(cfg).startswith(b'invalid value "x" for profiling.wait')
    assert lib.tprof_config_set(cfg, b"stages", b"a,b") == 0
    assert lib.tprof_config_error(cfg) == b""  # the error of the last call: none
    assert lib.tprof_config_set(cfg, b"epochs", b"1,2") == 0
    assert lib.tprof_config_error(cfg) == b""
    lib.tprof_config_free(cfg)


def test_long_run_id_is_refused_and_lines_keep_their_reason(tmp_path):
    rc, stderr = train(tmp_path, "--profile", "--profiling.run_id", "r" * 5000)
    line = one_tprof_line(stderr)
    assert rc == 2 and len(line) < 400, line
    assert line.endswith("must be one plain path component of at most 200 bytes: not empty, "
                         "\".\" or \"..\", without '/' or control characters"), line
    rc, stderr = train(tmp_path, "--profile", "--profiling.run_id", "r" * 200)
    assert rc == 0 and (tmp_path / "out" / ("r" * 200)).is_dir(), stderr
    # a path too long for the file system: the line ends with the system's reason
    deep = tmp_path / ("d" * 250) / ("e" * 250) / ("f" * 260)
    rc, stderr = train(tmp_path, "--profile", "--profiling.output_dir", str(deep))
    line = next(x for x in stderr.splitlines() if x.startswith("tprof: cannot create"))
    assert rc == 0 and "File name too long; no traces or artifacts will be written" in line, line
    assert len(line) < 300, line


def test_python_strings_are_converted_alike():
    """Before: flight_save("a\\0b") saved reason "a", flight_save("\\ud800") raised TypeError,
    arg("k", "a\\0b") stored "a": every str given to the C library now has tprof.range's rules:
    a NUL is a ValueError (recording calls: one line, ignored), lone surrogates are replaced."""
    out = python(r"""
        import tprof
        from tprof import _tprof


        print(error(lambda: _tprof.flight_save("a\0b")))
        print(error(lambda: _tprof.flight_save("\ud800")))
        print(error(lambda: _tprof.flight_save(5)))
        # recording never raises (docs/PYTHON.md): a NUL is one tprof: line, the call ignored
        for fn in (lambda: _tprof.arg("k", "a\0b"), lambda: _tprof.arg("k\0", "v"),
                   lambda: _tprof.counter("c\0", 1), lambda: _tprof.thread_name("t\0"),
                   lambda: _tprof.shapes("[\0]"), lambda: _tprof.category("c\0"),
                   lambda: _tprof.warn("w\0")):
            print(error(fn))
        print(error(lambda: _tprof.arg("k", "\ud800")))
        print(error(lambda: _tprof.Config().load_args(["prog", "--profiling.run_id", "a\0b"])))
        print(sorted(m for m in tprof.messages() if "NUL" in m))
    """).splitlines()
    assert out[0] == "ValueError: tprof.flight_save: the text 'a\\x00b' holds a NUL character"
    assert out[1] == "no error"  # replaced, as tprof.range does
    assert out[2] == "TypeError: tprof.flight_save(reason): reason must be a str, not int"
    assert out[3:11] == ["no error"] * 8, out
    assert out[11] == "ValueError: argv[2] holds a NUL character", out
    assert out[12] == str(["tprof.%s: a text argument holds a NUL character (ignored)" % fn
                           for fn in ("arg", "category", "counter", "shapes", "thread_name",
                                      "warn")]), out


def test_python_profile_reports_the_run_directory_taken(tmp_path):
    """A run_id naming a folder tprof did not make goes to <run_id>-2 (issue 22, finding 7):
    tprof.profile's run_dir and summary() follow it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text("mine")
    out = python(r"""
        import tprof
        with tprof.profile(output_dir=%r, run_id="src", summary=False) as prof:
            for _ in range(3):
                with tprof.range("work"):
                    pass
                prof.step()
        print(prof.run_dir)
        print(prof.summary()["run"]["dir"])
    """ % str(tmp_path)).splitlines()
    assert out == [str(tmp_path / "src-2")] * 2, out
    assert (tmp_path / "src" / "config.json").read_text() == "mine"
