"""What the reliability tests (tests/reliability/test_reliability_*.py) share: the programs under
test (build/tprof, build/tests/tp_hostile), runs with a time limit that never hide a signal, and
checks that a folder holds no temporary file."""

import json
import os
import pathlib
import subprocess

BUILD = pathlib.Path(os.environ["TPROF_BUILD_DIR"])
SOURCE = pathlib.Path(os.environ["TPROF_SOURCE_DIR"])
FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
TPROF = BUILD / "tprof"
HOSTILE = BUILD / "tests" / "tp_hostile"
TIMEOUT = 300


def clean_env(**extra):
    """The environment without any TPROF_ setting of the caller, plus extra."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    env.update(extra)
    return env


def profiled(mode, arg, out_dir, run_id, *options, env=None, preexec_fn=None, rc=0):
    """Runs tp_hostile MODE ARG profiled into out_dir/run_id; returns the CompletedProcess."""
    args = [str(HOSTILE), mode, str(arg), "--profile", "--profiling.output_dir", str(out_dir),
            "--profiling.run_id", run_id, "--profiling.summary", "false"] + list(options)
    p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT,
                       env=env or clean_env(), preexec_fn=preexec_fn)
    if rc is not None:
        assert p.returncode == rc, "%s: exit %d; stderr: %s" % (args, p.returncode, p.stderr)
    return p


def tprof(*args, rc=None):
    """Runs tprof; never killed by a signal; rc, when given, must match."""
    p = subprocess.run([str(TPROF)] + [str(a) for a in args], capture_output=True,
                       timeout=TIMEOUT)
    assert p.returncode >= 0, "tprof %s: killed by signal %d" % (args, -p.returncode)
    if rc is not None:
        assert p.returncode == rc, "tprof %s: exit %d, not %d; stderr: %s" % (
            " ".join(map(str, args)), p.returncode, rc, p.stderr.decode(errors="replace"))
    return p


def error_line(p):
    """The one line a failing tprof prints on stderr."""
    text = p.stderr.decode("utf-8", errors="replace")
    lines = text.splitlines()
    assert len(lines) == 1 and text.endswith("\n"), "not one line: %r" % text
    assert lines[0].startswith("tprof: "), lines[0]
    return lines[0]


def leftovers(directory):
    """Temporary files anywhere under directory."""
    return [os.path.join(root, f) for root, _, files in os.walk(directory)
            for f in files if ".tmp." in f]


def traces(run_dir):
    return sorted(p for p in pathlib.Path(run_dir).iterdir() if p.name.startswith("trace_"))


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read())
