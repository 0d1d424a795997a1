"""How a streamed Perfetto trace (`stream: true`, `trace_format: perfetto`) lays its slices out,
read with the Perfetto project's own definitions (perfetto_trace_pb2 of the `perfetto` package):
each slice's end the packet right after its begin (ranges written as they end), and each
track's slices nested once sorted by time, as Perfetto's trace processor sorts them. Import it
after pytest.importorskip of that package."""
import collections

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

__all__ = ["begins_end_at_once", "lanes_nest_by_time", "packets"]


def packets(path):
    """The trace's packets, parsed whole."""
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    return list(trace.packet)


def _is(p, kind):
    return p.HasField("track_event") and p.track_event.type == kind


def begins_end_at_once(path):
    """Whether each slice's end is the packet right after its begin, on its track: the streamed
    layout, not the whole window's (nested begins in time order)."""
    ps = packets(path)
    begins = [i for i, p in enumerate(ps) if _is(p, pb.TrackEvent.TYPE_SLICE_BEGIN)]
    assert begins
    return all(_is(ps[i + 1], pb.TrackEvent.TYPE_SLICE_END) and
               ps[i + 1].track_event.track_uuid == ps[i].track_event.track_uuid for i in begins)


def lanes_nest_by_time(path):
    """Whether the slices of each track nest once sorted by time, as a reader that sorts the
    packets by timestamp (Perfetto's trace processor) pairs them: no two overlap without one
    containing the other, and none starts with another (which a sort by time alone could not
    order)."""
    spans = collections.defaultdict(list)
    for p in packets(path):
        if _is(p, pb.TrackEvent.TYPE_SLICE_BEGIN):
            spans[p.track_event.track_uuid].append([p.timestamp, None])
        elif _is(p, pb.TrackEvent.TYPE_SLICE_END):
            spans[p.track_event.track_uuid][-1][1] = p.timestamp
    for lane in spans.values():
        stack = []
        for b, e in sorted(lane, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= b:
                stack.pop()
            if stack and (stack[-1][1] < e or stack[-1][0] == b):
                return False
            stack.append((b, e))
    return True
