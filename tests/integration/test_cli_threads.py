"""tprof analyze with the parallel reader (src/trace/parts.c): the JSON report is the same bytes
whatever the threads and wherever the input is cut, on every fixture; a bad event in a later
part gives the one-thread message. The cuts are forced with TPROF_TEST_READ_CUTS (the fixtures
are smaller than the reader's smallest part)."""
import gzip
import os

import pytest
from cli_helpers import TRACES, error_line, tprof


def plain(trace, tmp_path):
    """The fixture as plain JSON (the parallel reader does not split gzip)."""
    raw = trace.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    out = tmp_path / "trace.json"
    out.write_bytes(data)
    return out, len(data)


def analyze(path, cuts=None, threads=1):
    env = dict(os.environ)
    env.pop("TPROF_TEST_READ_CUTS", None)
    if cuts:
        env["TPROF_TEST_READ_CUTS"] = ",".join(str(c) for c in cuts)
    return tprof("analyze", "--json", "--threads", threads, path, rc=None, env=env)


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_report_bytes_do_not_depend_on_the_cut(trace, tmp_path):
    path, size = plain(trace, tmp_path)
    one = analyze(path)
    assert one.returncode == 0, one.stderr
    for parts in (2, 3, 7):
        cuts = [size * k // parts + 13 * k for k in range(1, parts)]
        cut = analyze(path, cuts, threads=parts)
        assert cut.returncode == 0, cut.stderr
        assert cut.stdout == one.stdout, "cut at %s" % cuts


def test_bad_event_in_a_later_part(tmp_path):
    events = ['{"ph": "X", "name": "op%d", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": %d, "dur": 1}'
              % (i, i) for i in range(2000)]
    events[1500] = '{"ph": "X", "name": "bad", "ts": 1 2}'
    text = '{"traceEvents": [\n' + ",\n".join(events) + "\n]}\n"
    path = tmp_path / "bad.json"
    path.write_text(text)
    one = analyze(path)
    assert one.returncode == 2
    for cuts in ([len(text) // 2], [len(text) // 4, len(text) * 3 // 4], [text.index('"bad"') - 3]):
        cut = analyze(path, cuts, threads=2)
        assert cut.returncode == 2
        assert error_line(cut) == error_line(one)
    assert "byte %d:" % (text.index('1 2}') + 2) in error_line(one)  # the absolute offset


def test_progress_counts_every_part(tmp_path):
    """The progress line of a parallel read counts the bytes of every part, each up to the next
    part's start: it never passes 100% nor goes back (reader.c, bytes_read). That it shows more
    than the first part's share depends on the threads' timing, so it is not asserted here."""
    event = '{"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": %d, "dur": 1}'
    path = tmp_path / "big.json"
    with open(path, "w") as f:  # over the 100 MB from which progress shows
        f.write('{"traceEvents": [\n')
        f.write(",\n".join(event % i for i in range(1_400_000)))
        f.write("\n]}\n")
    size = path.stat().st_size
    env = dict(os.environ, TPROF_TEST_READ_CUTS="%d,%d" % (size // 3, size * 2 // 3))
    r = tprof("analyze", "--progress", "--threads", 3, "-o", os.devnull, path, rc=0, env=env)
    shown = [int(line.split("%")[0].rsplit(" ", 1)[-1])
             for line in r.stderr.decode().splitlines() if line.startswith("tprof: reading")]
    assert shown and shown == sorted(shown) and shown[-1] <= 100
