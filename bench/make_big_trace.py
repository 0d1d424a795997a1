#!/usr/bin/env python3
"""Builds a large, realistic Kineto trace for bench/reader.sh by replicating a fixture's events.

The events are copied as the profiler wrote them (same layout, names, args and nesting); each
copy is shifted in time past the previous one, and its correlation ids, external ids, flow ids
and ProfilerStep numbers move to fresh ranges, so the result reads like one long profiling run.

Usage: make_big_trace.py [--source FIXTURE] [--mb SIZE] [--repeat N [--base BIG.json]] OUT.json
Writes OUT.json (at least SIZE MB of JSON, default 1100) and prints its size and event count.
--repeat N then writes those events N times as they are (same times), e.g. 10 GB from big.json:
make_big_trace.py --repeat 9 --base bench/out/big.json bench/out/big10g.json
"""
import argparse
import gzip
import json
import os
import re
import sys

# The values each copy moves: "ts": 123.456, ids, and step names.
FIELD = re.compile(r'"(ts|id|correlation|External id)": (\d+)(\.\d+)?|"ProfilerStep#(\d+)"')


def load_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return f.read()


def event_spans(text):
    """(start, end) of each event's text inside the traceEvents array, and the array's span."""
    key = text.index('"traceEvents"')
    pos = text.index("[", key) + 1
    dec = json.JSONDecoder()
    spans = []
    while True:
        while text[pos] in " \t\r\n,":
            pos += 1
        if text[pos] == "]":
            return spans, key, pos + 1
        _, end = dec.raw_decode(text, pos)
        spans.append((pos, end))
        pos = end


def repeat(base, out, times, head, tail, sep):
    """out: base's events (everything between head and tail) `times` times, joined by sep."""
    head_b, tail_b, sep_b = (x.encode("utf-8") for x in (head, tail, sep))
    size = os.path.getsize(base)
    body = (len(head_b), size - len(tail_b))
    tmp = out + ".tmp"
    with open(base, "rb") as src, open(tmp, "wb") as dst:
        assert src.read(len(head_b)) == head_b, "not made by this script from this source"
        dst.write(head_b)
        for k in range(times):
            if k:
                dst.write(sep_b)
            src.seek(body[0])
            left = body[1] - body[0]
            while left:
                block = src.read(min(left, 64 << 20))
                dst.write(block)
                left -= len(block)
        assert src.read() == tail_b, "not made by this script from this source"
        dst.write(tail_b)
    os.replace(tmp, out)
    print("%s: %.1f MB, %d times the events of %s" % (out, os.path.getsize(out) / 1e6, times, base))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    fixtures = os.path.join(here, "..", "tests", "fixtures")
    ap.add_argument("--source", default=os.path.join(fixtures, "kineto", "nccl_data.json.gz"))
    ap.add_argument("--mb", type=float, default=1100)
    ap.add_argument("--repeat", type=int, default=1,
                    help="then repeat the events N times as they are (same times: a 10 GB "
                         "trace in the time of a copy)")
    ap.add_argument("--base", help="with --repeat: a trace this script made from the same "
                                   "source, repeated instead of a new one")
    ap.add_argument("out")
    a = ap.parse_args()

    text = load_text(a.source)
    spans, key, array_end = event_spans(text)
    body = [text[s:e] for s, e in spans if '"ph": "M"' not in text[s:e]]
    meta = [text[s:e] for s, e in spans if '"ph": "M"' in text[s:e]]
    sep = text[spans[0][1]:spans[1][0]] if len(spans) > 1 else ",\n  "
    events = json.loads("[" + ",".join(body) + "]")
    lo = min(e["ts"] for e in events if "ts" in e)
    hi = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e)
    dt = int(hi - lo) + 1000  # a millisecond between copies
    biggest = {"id": 0, "correlation": 0, "External id": 0, "step": 0}
    for m in FIELD.finditer("".join(body)):
        if m.group(1) in biggest:
            biggest[m.group(1)] = max(biggest[m.group(1)], int(m.group(2)))
        elif m.group(4):
            biggest["step"] = max(biggest["step"], int(m.group(4)))
    chunk = sep.join(body)
    # The chunk as literal text between the values that move, parsed once: a copy only formats
    # the moved values (10 GB in minutes).
    lits, marks, last = [], [], 0
    for m in FIELD.finditer(chunk):
        lits.append(chunk[last:m.start()])
        step = int(m.group(4)) if m.group(4) else None
        marks.append((m.group(1), int(m.group(2) or 0), m.group(3) or "", step))
        last = m.end()
    tail = chunk[last:]

    def copy_of(copy):
        if copy == 0:
            return chunk
        out = []
        for lit, (field, num, frac, step) in zip(lits, marks):
            out.append(lit)
            if step is not None:
                out.append('"ProfilerStep#%d"' % (step + copy * (biggest["step"] + 1)))
            elif field == "ts":
                out.append('"ts": %d%s' % (num + copy * dt, frac))
            else:
                out.append('"%s": %d%s' % (field, num + copy * (biggest[field] + 1) if num else 0,
                                           frac))
        out.append(tail)
        return "".join(out)

    target, n, copy = int(a.mb * 1e6), 0, 0
    tmp = a.out + ".tmp"
    head = text[:text.index("[", key) + 1] + text[text.index("[", key) + 1:spans[0][0]]
    if a.base:
        return repeat(a.base, a.out, a.repeat, head, text[spans[-1][1]:], sep)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(head + sep.join(meta))
        size = len(head)
        while size < target:
            piece = sep + copy_of(copy)
            f.write(piece)
            size += len(piece.encode("utf-8"))
            n += len(body)
            copy += 1
        f.write(text[spans[-1][1]:])
    if a.repeat > 1:
        repeat(tmp, a.out, a.repeat, head, text[spans[-1][1]:], sep)
        os.remove(tmp)
        return 0
    os.replace(tmp, a.out)
    print("%s: %.1f MB, %d events, %d copies of %s" % (a.out, os.path.getsize(a.out) / 1e6,
                                                        n + len(meta), copy,
                                                        os.path.basename(a.source)))


if __name__ == "__main__":
    sys.exit(main())
