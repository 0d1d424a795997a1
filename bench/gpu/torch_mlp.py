#!/usr/bin/env python3
"""The main demo's MLP (examples/train_mlp.c, and train_mlp_cuda.cu on the GPU) in PyTorch, for
bench/gpu/check.sh: 64 -> 256 -> 128 -> 10 with ReLU, softmax cross-entropy and SGD, on ten
Gaussian clusters, with the same stages as record_function ranges.

  torch_mlp.py [--steps N] [--batch B] [--trace FILE | --tprof DIR [--stream] | --profile-all]
               [--device cpu]
               [--cuda-graph | --compile] [--beside torch|tprof --trace FILE --tprof DIR]

With --trace, torch.profiler records ten steps after wait 3 and warmup 2 (one cycle) and writes
its Kineto trace to FILE; with --tprof, tprof.profile records the same steps (module ranges, GPU
through tprof's own CUPTI source, gpu: on) into the run directory DIR/torch_mlp (--stream: the
window streamed while it records, CUPTI's records in its segments); with
--profile-all torch.profiler records every step (for the overhead comparison) and keeps no trace;
with --cuda-graph forward, backward and the optimizer are captured once with torch.cuda.graph and
replayed each step (a "graph replay" range; CUDA only); with --compile the model is
torch.compile'd (inductor's default mode). With --beside, torch.profiler and tprof.profile record
the same steps at once, the one named started first (CUPTI shared by two profilers). Prints
"train_ms=... steps=... step_ms=...", as the example does."""
import argparse
import time

import torch

INPUT, HIDDEN1, HIDDEN2, CLASSES = 64, 256, 128, 10


def _graphed(load, compute, sync):
    """A step that copies the batch into static inputs and replays compute, captured once (after
    a warm-up on a side stream, as torch.cuda.graph requires)."""
    static_x, static_y = load()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            compute(static_x, static_y)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = compute(static_x, static_y)
    sync()

    def step():
        xd, yd = load()
        static_x.copy_(xd)
        static_y.copy_(yd)
        with torch.profiler.record_function("graph replay"):
            graph.replay()
        return static_loss

    return step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--trace")
    ap.add_argument("--tprof", metavar="DIR")
    ap.add_argument("--profile-all", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu runs it where there is no GPU (tests)")
    ap.add_argument("--cuda-graph", action="store_true")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--compile-mode", default="default",
                    help="torch.compile's mode with --compile (reduce-overhead: CUDA graphs)")
    ap.add_argument("--stream", action="store_true",
                    help="with --tprof: the window streamed (stream: true), its summary in pieces")
    ap.add_argument("--beside", choices=("torch", "tprof"),
                    help="both profilers at once, this one started first")
    a = ap.parse_args()
    if a.beside and not (a.trace and a.tprof):
        ap.error("--beside needs --trace and --tprof")
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    if a.cuda_graph and not cuda:
        ap.error("--cuda-graph needs a CUDA device")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    gen = torch.Generator().manual_seed(1)
    centers = torch.randn(CLASSES, INPUT, generator=gen) * 1.5
    model = torch.nn.Sequential(
        torch.nn.Linear(INPUT, HIDDEN1), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN1, HIDDEN2), torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN2, CLASSES)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    run_model = torch.compile(model, mode=a.compile_mode) if a.compile else model
    # inductor's CUDA graphs own their outputs (the gradients too) until the next step begins
    graphed = a.compile and a.compile_mode == "reduce-overhead"
    x_host = torch.empty(a.batch, INPUT, pin_memory=cuda)
    y_host = torch.empty(a.batch, dtype=torch.long, pin_memory=cuda)

    def load():
        with torch.profiler.record_function("dataloader"):
            labels = torch.randint(0, CLASSES, (a.batch,), generator=gen)
            x = centers[labels] + torch.randn(a.batch, INPUT, generator=gen) * 3.5
            x_host.copy_(x / torch.sqrt((x * x).mean(dim=1, keepdim=True) + 1e-6))
            y_host.copy_(labels)
            xd = x_host.to(dev, non_blocking=True)
            yd = y_host.to(dev, non_blocking=True)
            sync()  # the host buffers are refilled next step
        return xd, yd

    def compute(xd, yd):
        if graphed:
            torch.compiler.cudagraph_mark_step_begin()
        with torch.profiler.record_function("forward"):
            loss = torch.nn.functional.cross_entropy(run_model(xd), yd)
        with torch.profiler.record_function("backward"):
            opt.zero_grad(set_to_none=graphed)
            loss.backward()
        with torch.profiler.record_function("optimizer"):
            opt.step()
        return loss

    def step():
        return compute(*load())

    for _ in range(3):  # cuBLAS handles and kernels load outside the timing
        step()
    sync()
    if a.cuda_graph:
        step = _graphed(load, compute, sync)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    def torch_window():
        return torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=3, warmup=2, active=10, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(a.trace))

    def tprof_window():
        import tprof
        # streamed: a budget small enough that the summary is cut into pieces (max_events / 8),
        # and every op in it (as `tprof analyze --top 1000` lists them, check_trace.py summary)
        streamed = {"stream": True, "max_events": 16384, "top_k": 1000} if a.stream else {}
        return tprof.profile(model=model, wait=3, warmup=2, active=10, repeat=1,
                             gpu="on" if cuda else "off", output_dir=a.tprof, run_id="torch_mlp",
                             summary=False, **streamed)

    makers = []
    if a.trace:
        makers.append(torch_window)
    if a.tprof and (a.beside or not a.trace):
        makers.append(tprof_window)
    if a.profile_all:
        makers.append(lambda: torch.profiler.profile(activities=activities))
    if a.beside == "tprof":
        makers.reverse()
    profs = []
    for make in makers:  # each made and started before the next exists: the first holds CUPTI
        profs.append(make())
        profs[-1].start()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
        for prof in profs:
            prof.step()
    sync()
    ms = (time.perf_counter() - t0) * 1e3
    for prof in reversed(profs):
        prof.stop()
    print(f"loss {loss.item():.4f}")
    print(f"train_ms={ms:.3f} steps={a.steps} step_ms={ms / a.steps:.4f}")


if __name__ == "__main__":
    main()
