"""Bad input and bad usage never crash or hang the tprof command: a trace cut at many lengths
(plain and gzip), empty input, random bytes, deep nesting, absurd numbers, a directory without
traces, a missing file, unwritable output, wrong options. Each failure exits 2 with one line on
stderr naming the file (and, for bad trace text, the byte offset); every run has a time limit and
a signal fails the test. Also: help and --version."""

import gzip
import random
import re
import subprocess

import pytest
from cli_helpers import SOURCE, TPROF, TRACES, error_line, tprof

SMALL = next(p for p in TRACES if "mi250" in p.name)  # object form, 66 KB of JSON
BYTE_ERROR = re.compile(r"tprof: (.+): byte (\d+): (.+)")


def byte_error(p, path):
    m = BYTE_ERROR.fullmatch(error_line(p))
    assert m, error_line(p)
    assert m.group(1) == str(path)
    return int(m.group(2))


@pytest.fixture(scope="module")
def text():
    return gzip.decompress(SMALL.read_bytes())


def test_cut_at_many_lengths(text, tmp_path):
    path = tmp_path / "cut.json"
    lengths = sorted(set(range(0, 400, 7)) | set(range(0, len(text), 613)) |
                     {len(text) - k for k in range(1, 40, 3)})
    for n in lengths:
        path.write_bytes(text[:n])
        if text[:n].strip() == text.strip():
            tprof("analyze", "--json", path, rc=0)
            continue
        p = tprof("analyze", "--json", path, rc=2)
        assert byte_error(p, path) <= n
        assert p.stdout == b""


def test_cut_gzip(tmp_path):
    raw = SMALL.read_bytes()
    path = tmp_path / "cut.json.gz"
    for n in list(range(2, 60, 5)) + list(range(60, len(raw) - 1, len(raw) // 23)):
        path.write_bytes(raw[:n])
        p = tprof("analyze", path, rc=2)
        assert error_line(p).startswith("tprof: %s: " % path)


def test_empty_input(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert "empty input" in error_line(tprof("analyze", empty, rc=2))
    assert error_line(tprof("analyze", "-", stdin=b"", rc=2)).startswith("tprof: <stdin>: byte 0")
    empty.write_bytes(b"  \n\t ")
    byte_error(tprof("analyze", empty, rc=2), empty)


def test_random_bytes(tmp_path):
    rng = random.Random(1234)
    path = tmp_path / "random.json"
    for i in range(40):
        head = [b"", b"{", b"[", b'{"traceEvents": [', b"\x1f\x8b"][i % 5]
        data = head + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 3000)))
        path.write_bytes(data)
        p = tprof("analyze", path, rc=2)
        assert error_line(p).startswith("tprof: %s: " % path)


@pytest.mark.parametrize("doc", [
    b"[" * 200000,
    b'{"traceEvents": [{"ph": "X", "args": ' + b'{"a": ' * 100000,
    b'{"traceEvents": [{"ph": "X", "args": ' + b"[" * 100000 + b"]" * 100000 + b"}]}",
    b'{"traceEvents": [' + b'{"ph": "B", "name": "x", "pid": 1, "tid": 1, "ts": 1},' * 50000
    + b"{}]}",
], ids=["arrays", "objects", "closed", "unclosed_ranges"])
def test_deep_nesting(doc, tmp_path):
    path = tmp_path / "deep.json"
    path.write_bytes(doc)
    p = tprof("analyze", "--json", path, timeout=60)
    assert p.returncode in (0, 2)
    if p.returncode == 2:
        byte_error(p, path)


@pytest.mark.parametrize("event", [
    '{"ph": "X", "ts": 123456789012345678901234567890, "dur": 1, "name": "a", "pid": 1, "tid": 1}',
    '{"ph": "X", "ts": 1e400, "dur": 1, "name": "a", "pid": 1, "tid": 1}',
    '{"ph": "X", "ts": 1, "dur": -5, "name": "a", "pid": 1e30, "tid": -1e30}',
    '{"ph": "X", "ts": 9223372036854775, "dur": 9223372036854775, "name": "ProfilerStep#1",'
    ' "pid": 1, "tid": 1}',
    '{"ph": "i", "name": "[memory]", "ts": 1, "pid": 1, "tid": 1, "args": {"Device Type": 1,'
    ' "Device Id": 99999999999999999999, "Bytes": 1e300, "Total Allocated": -1e300}}',
    '{"ph": "X", "ts": -9.9e15, "dur": 1e15, "name": "ProfilerStep#-3", "pid": "x", "tid": 1}',
])
def test_absurd_numbers(event, tmp_path):
    """Analysed (events whose times cannot be kept are left out, with one warning naming the
    file and the byte) or refused with one line; never a crash."""
    path = tmp_path / "absurd.json"
    path.write_text('{"traceEvents": [%s, %s]}' % (event, event))
    p = tprof("analyze", "--json", path)
    if p.returncode == 0:
        for line in p.stderr.decode().splitlines():
            assert re.fullmatch(r"tprof: %s: .*byte \d+.*" % re.escape(str(path)), line)
    else:
        assert p.returncode == 2
        byte_error(p, path)


def test_no_traces_and_missing_files(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "config.json").write_text("{}")
    line = error_line(tprof("analyze", tmp_path, rc=2))
    assert line == ("tprof: %s: no trace files in this directory (*.json, *.json.gz, *.pftrace)"
                    % tmp_path)
    line = error_line(tprof("analyze", tmp_path / "missing.json", rc=2))
    assert line == "tprof: %s: cannot open: No such file or directory" % (tmp_path / "missing.json")
    # one bad input among good ones fails the whole analysis
    line = error_line(tprof("analyze", SMALL, tmp_path / "missing.json", rc=2))
    assert "missing.json" in line


def test_unwritable_output(tmp_path):
    error_line(tprof("analyze", SMALL, "-o", tmp_path, rc=2))  # a directory
    with open("/dev/full", "wb") as full:
        p = subprocess.run([str(TPROF), "analyze", str(SMALL)], stdout=full,
                           stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 2
    assert error_line(p) == "tprof: <stdout>: cannot write: No space left on device"
    tprof("analyze", SMALL, "-o", "/dev/null", rc=0)  # a device is written, not replaced


@pytest.mark.parametrize("args", [
    ["analyze"], ["analyze", "--bogus", "x"], ["analyze", "--top"], ["analyze", "--top", "0", "x"],
    ["analyze", "--top", "ten", "x"], ["analyze", "--json", "--csv", "x"],
    ["analyze", "--rank", "-1", "x"], ["analyze", "--json=yes", "x"], ["analyze", "-q", "x"],
    ["check"], ["check", "--analysis", "--report"], ["check", "--json", "a"], ["compare", "a"],
    ["nope"],
    ["help", "nope"], ["help", "analyze", "check"],
])
def test_usage_errors(args):
    line = error_line(tprof(*args, rc=2))
    assert "tprof:" in line


def test_no_command():
    p = tprof(rc=2)
    assert p.stderr.startswith(b"usage: tprof")


def test_help_and_version():
    header = (SOURCE / "include" / "tprof.h").read_text()
    version = re.search(r'#define TPROF_VERSION +"([^"]+)"', header).group(1)
    assert tprof("--version", rc=0).stdout == ("tprof %s\n" % version).encode()
    overview = tprof("help", rc=0).stdout.decode()
    assert tprof("--help", rc=0).stdout.decode() == overview
    for verb in ("analyze", "compare", "check"):
        assert re.search(r"^  %s +\S" % verb, overview, re.M)
        text = tprof(verb, "--help", rc=0).stdout.decode()
        assert text.startswith("usage: tprof %s" % verb) and "Exit status" in text
        assert tprof("help", verb, rc=0).stdout.decode() == text
        assert tprof(verb, "-h", rc=0).stdout.decode() == text
    # every option the help of analyze lists is accepted
    for opt in re.findall(r"^  (?:-\w, )?(--[a-z-]+)", tprof("help", "analyze").stdout.decode(),
                          re.M):
        if opt in ("--help",):
            continue
        value = {"--top": ["3"], "--stage": ["s=x"], "--rank": ["0"],
                 "--output": ["/dev/null"]}.get(opt, [])
        p = tprof("analyze", opt, *value, SMALL)
        assert p.returncode in (0, 2), opt
        assert b"unknown option" not in p.stderr
