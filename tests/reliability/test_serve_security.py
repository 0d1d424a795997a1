"""`tprof serve` against hostile clients (issue 12, item 5): path traversal in every spelling
(`..`, `%2e%2e`, `%2f`, `%5c`, NUL, absolute paths and absolute-form targets), symbolic links
inside the served folder pointing out of it (a file, a run directory), a FIFO, requests other
than GET/HEAD, oversized request lines and headers, malformed request lines sent on raw sockets,
slow clients holding half a request (slowloris), more connections than the limit and a
foreign Host header (DNS rebinding). A secret planted beside the served folder, in a file and
in a valid trace, must never appear in any answer; the server must answer normally afterwards,
keep its memory bounded, and stop with exit status 0 on SIGINT and SIGTERM."""

import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import time

import pytest

from served import TPROF, Served, has_serve

FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
TRACE = FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz"

pytestmark = pytest.mark.skipif(not has_serve(), reason="tprof built without libmicrohttpd")

SECRET = "TPROFSECRET" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """root/secret.txt and root/secret.json (a trace with the secret as an op name) outside
    root/served, the folder served: run1 (a real trace, a FIFO), run2 (a trace and a link to
    the secret trace), linkrun (a link to root/outside, a run holding the secret trace)."""
    root = tmp_path_factory.mktemp("serve")
    (root / "secret.txt").write_text(SECRET + "\n")
    secret_trace = {"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "name": SECRET, "ts": 10, "dur": 50, "pid": 1, "tid": 1}]}
    (root / "secret.json").write_text(json.dumps(secret_trace))
    served = root / "served"
    (served / "run1").mkdir(parents=True)
    shutil.copy(TRACE, served / "run1" / "trace_0001.json.gz")
    os.mkfifo(served / "run1" / "pipe.json")
    (served / "run2").mkdir()
    shutil.copy(TRACE, served / "run2" / "trace_0001.json.gz")
    os.symlink(root / "secret.json", served / "run2" / "trace_0002.json")
    (root / "outside").mkdir()
    shutil.copy(root / "secret.json", root / "outside" / "trace_0001.json")
    os.symlink(root / "outside", served / "linkrun")
    os.symlink("../secret.txt", served / "secret_link.txt")
    return root


@pytest.fixture(scope="module")
def server(tree):
    with Served(tree / "served") as s:
        yield s
    assert s.rc == 0, "tprof serve exit %s after SIGINT; stderr: %s" % (s.rc, s.stderr)


def raw(server, data, timeout=10.0):
    """Sends bytes on a fresh connection and returns everything read until the server closes
    it or the timeout passes (b"" when it closed without a word)."""
    with socket.create_connection((server.host, server.port), timeout=timeout) as c:
        chunks = []
        try:
            c.sendall(data)
            c.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before reading all of an oversized one
            pass
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                chunks.append(b)
        except (TimeoutError, ConnectionResetError):
            pass
    return b"".join(chunks)


def status_of(answer):
    """The status code of a raw answer, or None when the server closed without one."""
    if not answer:
        return None
    line = answer.split(b"\r\n", 1)[0].split()
    assert line[0].startswith(b"HTTP/1."), answer[:200]
    return int(line[1])


def assert_still_serving(server):
    status, _, body = server.get("/api/runs")
    assert status == 200
    names = [r["name"] for r in json.loads(body)["runs"]]
    assert sorted(names) == ["run1", "run2"]


def request_line(target, host="localhost"):
    return ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (target, host)).encode()


TRAVERSALS = [
    "/../secret.txt", "/runs/../../secret.txt", "/runs/run1/../../secret.txt",
    "/runs/run1/../../../secret.txt", "/%2e%2e/secret.txt", "/runs/%2e%2e/%2e%2e/secret.txt",
    "/runs/%2E%2E/%2E%2E/secret.txt", "/runs/run1%2f..%2f..%2fsecret.txt",
    "/runs/run1%2F%2E%2E%2F%2E%2E%2Fsecret.txt", "/runs/..%5c..%5csecret.txt",
    "/runs/run1/..\\..\\secret.txt", "/runs/run1/%00/../../secret.txt", "/runs/.%2e/secret.txt",
    "/runs/%252e%252e/%252e%252e/secret.txt", "/secret_link.txt", "/runs/secret_link.txt/x",
    "//secret.txt", "/./secret.txt", "/runs/./run1/../../secret.txt",
]


@pytest.mark.parametrize("target", TRAVERSALS)
def test_traversal_is_refused(server, target):
    answer = raw(server, request_line(target))
    status = status_of(answer)
    assert status in (400, 404), (target, answer[:300])
    assert SECRET.encode() not in answer


def test_absolute_paths_are_refused(server, tree):
    secret = str(tree / "secret.txt")
    for target in [secret, "/runs" + secret, "/runs/run1" + secret, "/" + secret,
                   "http://localhost/../secret.txt", "http://localhost" + secret,
                   "file://" + secret, "secret.txt", "*"]:
        answer = raw(server, request_line(target))
        assert status_of(answer) in (None, 400, 404), (target, answer[:300])
        assert SECRET.encode() not in answer
    assert_still_serving(server)


def test_links_out_of_the_folder_are_not_followed(server):
    # a link inside a run, to a trace outside: the file is not served, the run not analysed
    status, _, body = server.get("/runs/run2/trace_0002.json")
    assert status == 404 and SECRET.encode() not in body
    status, _, body = server.get("/api/data?run=run2")
    assert status == 403 and SECRET.encode() not in body
    # a run directory that is a link to a folder outside: not listed, not served, not analysed
    status, _, body = server.get("/runs/linkrun/trace_0001.json")
    assert status == 404 and SECRET.encode() not in body
    status, _, body = server.get("/api/data?run=linkrun")
    assert status == 404 and SECRET.encode() not in body
    status, _, body = server.get("/api/runs")
    assert status == 200 and b"linkrun" not in body
    listed = {r["name"]: r for r in json.loads(body)["runs"]}
    assert listed["run2"]["analysable"] is False and listed["run1"]["analysable"] is True


def test_only_regular_files_are_served(server):
    start = time.monotonic()
    status, _, _ = server.get("/runs/run1/pipe.json")  # a FIFO: must not hang the server
    assert status == 404 and time.monotonic() - start < 5
    assert server.get("/runs/run1")[0] == 404  # a directory
    status, headers, body = server.get("/runs/run1/trace_0001.json.gz")
    assert status == 200 and body == TRACE.read_bytes()
    assert headers["X-Content-Type-Options"] == "nosniff"
    # a run's file runs in a sandbox (an origin of its own), never as the dashboard
    assert headers["Content-Security-Policy"] == "sandbox allow-scripts"


@pytest.mark.parametrize("run", ["..", "%2e%2e", "%2E.", "/etc", "%2fetc", "run1%2f..",
                                 "run1/..", ".hidden", "", "a%00b", "%zz", "..%5c.."])
def test_bad_run_names_are_refused(server, run):
    status, _, body = server.get("/api/data?run=" + run)
    assert status in (400, 404), run
    assert SECRET.encode() not in body


BAD_RUNS = ["..", "%2e%2e", "%2E.", "/etc", "%2fetc", "run1%2f..", "run1/..", ".hidden", "",
            "a%00b", "%zz", "..%5c.."]


@pytest.mark.parametrize("run", BAD_RUNS)
def test_trace_checks_its_run_name(server, run):
    """api/trace names its run as api/data does, and is refused as api/data is."""
    status, _, body = server.get("/api/trace?run=" + run)
    assert status in (400, 404), (run, body)
    assert SECRET.encode() not in body


def test_trace_of_a_run(server, tree):
    """api/trace: the run's Trace view, the member `tprof report` embeds in its page for the same
    run (the same JSON), its ETag the run's change key as api/data's; a link in the run (run2)
    or to a folder outside (linkrun) is refused as api/data refuses it; no name, 400."""
    status, headers, body = server.get("/api/trace?run=run1")
    assert status == 200 and headers["Content-Type"] == "application/json"
    got = json.loads(body)["trace"]
    page = tree / "run1.html"
    subprocess.run([str(TPROF), "report", str(tree / "served" / "run1"), "-o", str(page)],
                   check=True, capture_output=True)
    html = page.read_text()
    start = html.index(">", html.index('id="tprof-data"')) + 1
    want = json.loads(html[start:html.index("</script>", start)])["trace"]
    assert got == want and got["ranges"] > 0
    assert headers["ETag"] == server.get("/api/data?run=run1")[1]["ETag"]
    status, _, body = server.get("/api/trace?run=run1", {"If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""
    status, _, body = server.get("/api/trace?run=run2")
    assert status == 403 and SECRET.encode() not in body
    status, _, body = server.get("/api/trace?run=linkrun")
    assert status == 404 and SECRET.encode() not in body
    status, _, body = server.get("/api/trace")
    assert status == 400 and b"api/trace needs ?run=NAME" in body
    assert_still_serving(server)


@pytest.mark.parametrize("run", BAD_RUNS)
@pytest.mark.parametrize("side", ["a", "b"])
def test_compare_checks_both_run_names(server, run, side):
    """api/compare takes two run names: each is checked as api/data's run, whichever side holds
    the bad one, and the answer names that side."""
    query = {"a": "run1", "b": "run1"}
    query[side] = run
    status, _, body = server.get("/api/compare?a=%s&b=%s" % (query["a"], query["b"]))
    assert status in (400, 404), (side, run, body)
    assert body.startswith(b"%d %s: " % (status, side.encode())), body
    assert SECRET.encode() not in body


def test_compare_refuses_links_and_missing_names(server):
    for query in ["a=run1&b=run2", "a=run2&b=run1"]:  # run2 holds a link to the secret
        status, _, body = server.get("/api/compare?" + query)
        assert status == 403 and SECRET.encode() not in body, query
    for query in ["a=linkrun&b=run1", "a=run1&b=linkrun"]:  # a link to a folder outside
        status, _, body = server.get("/api/compare?" + query)
        assert status == 404 and SECRET.encode() not in body, query
    for query in ["", "?a=run1", "?b=run1", "?run=run1"]:
        status, _, body = server.get("/api/compare" + query)
        assert status == 400 and b"api/compare needs ?a=RUN&b=RUN" in body, query
    # a good pair: the comparison of the run with itself, cached by both runs' change keys
    status, headers, body = server.get("/api/compare?a=run1&b=run1")
    assert status == 200 and json.loads(body)["compare"]["step_change_pct"] == 0
    status, _, body = server.get("/api/compare?a=run1&b=run1", {"If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""
    assert headers["ETag"] != server.get("/api/data?run=run1")[1]["ETag"]
    assert_still_serving(server)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE",
                                    "CONNECT", "PROPFIND"])
def test_only_get_and_head(server, method):
    answer = raw(server, ("%s /api/runs HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\n"
                          "Connection: close\r\n\r\nabc" % method).encode())
    assert status_of(answer) == 405, answer[:200]
    assert b"Allow: GET, HEAD" in answer


def test_head_has_no_body(server):
    answer = raw(server, b"HEAD /runs/run1/trace_0001.json.gz HTTP/1.1\r\nHost: localhost\r\n"
                         b"Connection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_of(answer) == 200 and body == b""
    assert b"Content-Length: %d" % TRACE.stat().st_size in head


def test_oversized_requests(server):
    long_url = "/runs/" + "a" * 100000
    assert status_of(raw(server, request_line(long_url))) in (None, 400, 414, 431)
    long_header = b"GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"b" * 100000 + b"\r\n\r\n"
    assert status_of(raw(server, long_header)) in (None, 400, 413, 431)
    many = b"GET / HTTP/1.1\r\nHost: localhost\r\n" + b"".join(
        b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"
    assert status_of(raw(server, many)) in (None, 400, 413, 431)
    # within the limits but past the parser's: a path of many names, a name of 256 bytes
    assert status_of(raw(server, request_line("/a" * 9))) == 400
    assert status_of(raw(server, request_line("/runs/" + "n" * 256 + "/x"))) == 400
    assert_still_serving(server)


MALFORMED = [
    b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET /\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
    b"GET / HTTP/1.1\r\n\r\n", b"GET  /  HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\x00\x01\x02\x03\xff\xfe\r\n\r\n", b"GET /\x00/ HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: localhost\r\nNo colon here\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: -5\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    b"GET /%zz HTTP/1.1\r\nHost: localhost\r\n\r\n", b"GET /%2 HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"\r\n\r\n\r\n\r\n", b"GET / HTTP/1.1\nHost: localhost\n\n",
    b"GET /api/data?run=%00 HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"GET /api/data?run=run1&run=..&run HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"GET /api/compare?a=run1&b=%00 HTTP/1.1\r\nHost: localhost\r\n\r\n",
    b"GET /api/compare?a=run1&b=run1&b=..&a HTTP/1.1\r\nHost: localhost\r\n\r\n",
]


@pytest.mark.parametrize("request_bytes", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_requests_get_4xx_or_nothing(server, request_bytes):
    answer = raw(server, request_bytes)
    status = status_of(answer)
    # a bare HTTP/1.0-style line or a well-formed one is answered; anything broken gets a 4xx
    # (505 for an HTTP version that is not 1.x) or the connection closed; never a crash
    assert status is None or status < 500 or (status == 505 and b"HTTP/9.9" in request_bytes), \
        answer[:300]
    assert SECRET.encode() not in answer
    assert_still_serving(server)


def test_foreign_host_header_is_refused(server):
    answer = raw(server, request_line("/api/runs", host="evil.example:%d" % server.port))
    assert status_of(answer) == 403
    for host in ["localhost:%d" % server.port, "127.0.0.1:%d" % server.port, "localhost:9999",
                 "[::1]:%d" % server.port]:
        assert status_of(raw(server, request_line("/api/runs", host=host))) == 200, host


def test_slow_clients_do_not_block_others(server):
    """Slowloris: clients that send half a request and wait hold a connection each, never the
    server; they are dropped after the idle timeout (10 s)."""
    slow = []
    for _ in range(40):
        c = socket.create_connection((server.host, server.port), timeout=30)
        c.sendall(b"GET /api/runs HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        slow.append(c)
    try:
        for _ in range(20):
            start = time.monotonic()
            assert server.get("/api/runs", timeout=5)[0] == 200
            assert time.monotonic() - start < 2
        # each slow connection is closed by the server within its timeout (plus slack)
        deadline = time.monotonic() + 25
        for c in slow:
            c.settimeout(max(0.1, deadline - time.monotonic()))
            answer = b""
            while True:  # closed (socket.timeout here fails the test), after an answer or not
                try:
                    b = c.recv(4096)
                except ConnectionResetError:
                    break
                if not b:
                    break
                answer += b
            assert status_of(answer) in (None, 400, 408), answer[:200]
    finally:
        for c in slow:
            c.close()
    assert_still_serving(server)


def test_many_connections(server):
    """More connections than the limit (256) at once: the extra ones are refused or closed,
    and the server serves normally once they are gone."""
    conns = []
    try:
        for _ in range(400):
            try:
                conns.append(socket.create_connection((server.host, server.port), timeout=5))
            except OSError:
                break
        for c in conns[:100]:
            try:
                c.sendall(request_line("/api/runs"))
            except OSError:
                pass
    finally:
        for c in conns:
            c.close()
    server.wait_for(lambda: server.get("/api/runs", timeout=5)[0] == 200, timeout=15)
    assert_still_serving(server)


def rss_kib(pid):
    for line in pathlib.Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(os.environ.get("TPROF_SANITIZE") == "1",
                    reason="AddressSanitizer keeps freed memory in quarantine: RSS says nothing")
def test_memory_stays_bounded(server):
    """Thousands of requests (data served from the cache, files, errors) grow the server's
    resident memory by a bounded amount, not per request."""
    for _ in range(50):
        server.get("/api/data?run=run1")
    before = rss_kib(server.proc.pid)
    for i in range(3000):
        path = ["/api/data?run=run1", "/api/runs", "/runs/run1/trace_0001.json.gz",
                "/runs/nope/x", "/%2e%2e/x"][i % 5]
        server.get(path)
    after = rss_kib(server.proc.pid)
    assert after - before < 16 * 1024, (before, after)


def test_sigterm_stops_cleanly(tree):
    s = Served(tree / "served")
    with s:
        assert s.get("/api/runs")[0] == 200
        s.proc.send_signal(signal.SIGTERM)
        _, s.stderr = s.proc.communicate(timeout=20)
        s.rc = s.proc.returncode
    assert s.rc == 0, s.stderr


def test_binds_loopback_by_default_and_refuses_a_busy_port(tree):
    with Served(tree / "served") as s:
        assert s.host == "127.0.0.1"
        p = subprocess.run([str(TPROF), "serve", str(tree / "served"), "--port", str(s.port)],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2
        assert "cannot listen on 127.0.0.1 port %d" % s.port in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
    assert s.rc == 0


def test_unreadable_folder_is_one_error_line(tmp_path):
    p = subprocess.run([str(TPROF), "serve", str(tmp_path / "missing")], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.strip() == "tprof: serve: %s: cannot read: No such file or directory" % (
        tmp_path / "missing")


def test_data_is_cached_by_change_key(server):
    """api/data carries the run's change key as ETag; asked again with it, the answer is 304
    and empty (the dashboard's polls cost a scan, not an analysis)."""
    status, headers, body = server.get("/api/data?run=run1")
    assert status == 200 and json.loads(body)["analysis"]["steps"]["count"] > 0
    etag = headers["ETag"]
    status, headers, body = server.get("/api/data?run=run1", {"If-None-Match": etag})
    assert status == 304 and body == b"" and headers["ETag"] == etag
    status, _, _ = server.get("/api/data?run=run1", {"If-None-Match": '"0000000000000000"'})
    assert status == 200


def test_concurrent_listings_are_whole(tmp_path):
    """Many clients listing the runs at once each get the whole list: each listing reads the
    folder through a descriptor of its own (a folder of 3000 entries takes several reads)."""
    import concurrent.futures
    for name in ("r1", "r2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}")
    for i in range(3000):
        (tmp_path / ("junk_%04d.txt" % i)).write_text("")
    with Served(tmp_path) as s:
        def listing(_):
            status, _, body = s.get("/api/runs")
            return status, sorted(r["name"] for r in json.loads(body)["runs"])
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            results = list(pool.map(listing, range(300)))
    assert s.rc == 0
    bad = [r for r in results if r != (200, ["r1", "r2"])]
    assert not bad, bad[:5]
