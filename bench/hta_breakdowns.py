#!/usr/bin/env python3
"""bench/hta_breakdowns.py TRACE: what bench/side_by_side.sh times for traceinsight (the PyPI
successor of Holistic Trace Analysis, package `hta`): load the trace and compute its GPU kernel
breakdown and its temporal breakdown, printing the sizes of the results (so nothing is skipped)."""
import os
import sys
import tempfile

from hta.trace_analysis import TraceAnalysis


def main(path):
    with tempfile.TemporaryDirectory() as folder:
        # HTA reads every trace of a folder: the one trace, linked in
        os.symlink(os.path.abspath(path), os.path.join(folder, os.path.basename(path)))
        analysis = TraceAnalysis(trace_dir=folder)
        _, kernels = analysis.get_gpu_kernel_breakdown(visualize=False)
        temporal = analysis.get_temporal_breakdown(visualize=False)
        print("kernels %d rows, temporal %d rows" % (len(kernels), len(temporal)))


if __name__ == "__main__":
    main(sys.argv[1])
