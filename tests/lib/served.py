"""`tprof serve` started for a test: on a free port of 127.0.0.1 (--port 0), its URL read from the
line it prints, stopped with SIGINT at the end, and its exit status (0: a clean stop) and stderr
kept for the test to check. Shared by the security tests (tests/reliability/test_serve_security.py)
and the browser test of the live dashboard (tests/integration/test_serve_browser.py)."""

import os
import pathlib
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request

BUILD = pathlib.Path(os.environ["TPROF_BUILD_DIR"])
TPROF = BUILD / "tprof"


def has_serve():
    """Whether this build's tprof has `serve` (built with libmicrohttpd): the verb of a build
    without it says so for any folder."""
    p = subprocess.run([str(TPROF), "serve", "/nonexistent/tprof-serve-probe"],
                       capture_output=True, text=True, timeout=30)
    return "built without libmicrohttpd" not in p.stderr


class Served:
    """A running `tprof serve DIR`; use as a context manager."""

    def __init__(self, folder, *args):
        self.folder = pathlib.Path(folder)
        self.args = [str(TPROF), "serve", str(folder), "--port", "0"] + list(args)
        self.proc = None
        self.url = None
        self.rc = None
        self.stderr = ""

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        line = self.proc.stdout.readline()  # "tprof serve: http://127.0.0.1:PORT/ (...)"
        m = re.search(r"(http://\S+/)", line)
        if not m:
            self.proc.kill()
            raise AssertionError("tprof serve printed no URL: %r; stderr: %s"
                                 % (line, self.proc.stderr.read()))
        self.url = m.group(1)
        self.host, self.port = re.match(r"http://([^:/]+):(\d+)/", self.url).groups()
        self.port = int(self.port)
        return self

    def stop(self):
        """SIGINT, as Ctrl-C; the exit status and stderr are kept."""
        if self.rc is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                _, self.stderr = self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired as e:
                self.proc.kill()
                _, self.stderr = self.proc.communicate()
                raise AssertionError("tprof serve did not stop on SIGINT within 20 s") from e
            self.rc = self.proc.returncode
        return self.rc

    def __exit__(self, *exc):
        self.stop()
        return False

    def get(self, path, headers=None, timeout=30):
        """(status, headers, body bytes) of GET path (kept exactly as given: no normalising)."""
        req = urllib.request.Request(self.url.rstrip("/") + path, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.headers, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read()

    def wait_for(self, predicate, timeout=10.0, every=0.1):
        """Polls predicate() until true; returns the seconds it took (fails after timeout)."""
        start = time.monotonic()
        while not predicate():
            if time.monotonic() - start > timeout:
                raise AssertionError("condition not met within %.1f s" % timeout)
            time.sleep(every)
        return time.monotonic() - start
