"""bench/make_ranks.py N OUT_DIR: N ranks of a torch.distributed job made from the two real ranks
of tests/fixtures/kineto/sampled_rank-{0,1}.json.gz: rank k is a copy of rank k % 2 with its
distributedInfo rank set to k and every time moved by k * 37.5 us (its clock off by that), written
as OUT_DIR/rank<k>.pt.trace.json (plain JSON, as torch.profiler writes it)."""
import gzip
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def main():
    n, out = int(sys.argv[1]), sys.argv[2]
    os.makedirs(out, exist_ok=True)
    src = []
    for r in (0, 1):
        path = os.path.join(ROOT, "tests", "fixtures", "kineto", "sampled_rank-%d.json.gz" % r)
        with gzip.open(path, "rt", encoding="utf-8") as f:
            src.append(json.load(f))
    for k in range(n):
        doc = json.loads(json.dumps(src[k % 2]))
        doc["distributedInfo"]["rank"] = k
        doc["distributedInfo"]["world_size"] = n
        for e in doc["traceEvents"]:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = round(e["ts"] + k * 37.5, 3)
        with open(os.path.join(out, "worker%d.rank%d.pt.trace.json" % (k, k)), "w") as f:
            json.dump(doc, f)


if __name__ == "__main__":
    main()
