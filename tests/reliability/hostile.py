"""What the reliability tests (tests/reliability/test_reliability_*.py) share: the programs under
test (build/tprof, build/tests/tp_hostile), runs with a time limit that never hide a signal, and
checks that a folder holds no temporary file. tprof itself runs through tests/integration's
cli_helpers."""

import json
import os
import pathlib
import subprocess
import sys

BUILD = pathlib.Path(os.environ["TPROF_BUILD_DIR"])
SOURCE = pathlib.Path(os.environ["TPROF_SOURCE_DIR"])
FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
HOSTILE = BUILD / "tests" / "tp_hostile"
TIMEOUT = 300

# running tprof and reading its one error line: as the command's own tests do
sys.path.insert(0, str(SOURCE / "tests" / "integration"))
from cli_helpers import error_line, tprof  # noqa: E402,F401  (re-exported to the tests)

from run_files import files_dir  # noqa: E402


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


def leftovers(directory):
    """Temporary files anywhere under directory."""
    return [os.path.join(root, f) for root, _, files in os.walk(directory)
            for f in files if ".tmp." in f]


def traces(run_dir):
    return sorted(p for p in files_dir(pathlib.Path(run_dir)).iterdir()
                  if p.name.startswith("trace_"))


def load(path):
    with open(path, "rb") as f:
        return json.loads(f.read())
