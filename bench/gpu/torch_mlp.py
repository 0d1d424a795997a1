#!/usr/bin/env python3
"""The example's MLP in PyTorch on the GPU, for bench/gpu/check.sh: the same sizes, data and
stages (record_function ranges) as examples/train_mlp_cuda.cu.

  torch_mlp.py --steps N [--trace FILE | --profile-all]

With --trace, torch.profiler records steps 5..14 (wait 3, warmup 2, active 10, one cycle) and
writes its Kineto trace to FILE; with --profile-all it records every step (for the overhead
comparison) and discards the trace. Prints "train_ms=... steps=... step_ms=...", as the
example does."""
import argparse
import time

import torch

INPUTS, CLASSES = 784, 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--trace")
    ap.add_argument("--profile-all", action="store_true")
    ap.add_argument("--device", default="cuda", help="cpu runs it where there is no GPU (tests)")
    a = ap.parse_args()
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    gen = torch.Generator().manual_seed(7)
    protos = torch.rand(CLASSES, INPUTS, generator=gen) * 2 - 1
    model = torch.nn.Sequential(torch.nn.Linear(INPUTS, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, CLASSES)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x_host = torch.empty(a.batch, INPUTS, pin_memory=cuda)
    y_host = torch.empty(a.batch, dtype=torch.long, pin_memory=cuda)

    def step():
        with torch.profiler.record_function("dataloader"):
            labels = torch.randint(0, CLASSES, (a.batch,), generator=gen)
            x_host.copy_(protos[labels] + torch.rand(a.batch, INPUTS, generator=gen) - 0.5)
            y_host.copy_(labels)
            x = x_host.to(dev, non_blocking=True)
            y = y_host.to(dev, non_blocking=True)
            sync()  # the host buffers are refilled next step
        with torch.profiler.record_function("forward"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        with torch.profiler.record_function("backward"):
            opt.zero_grad(set_to_none=False)
            loss.backward()
        with torch.profiler.record_function("optimizer"):
            opt.step()
        return loss

    for _ in range(3):  # cuBLAS handles and kernels load outside the timing
        step()
    sync()
    prof = None
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    if a.trace:
        prof = torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=3, warmup=2, active=10, repeat=1),
            on_trace_ready=lambda p: p.export_chrome_trace(a.trace))
    elif a.profile_all:
        prof = torch.profiler.profile(activities=activities)
    if prof:
        prof.start()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
        if prof:
            prof.step()
    sync()
    ms = (time.perf_counter() - t0) * 1e3
    if prof:
        prof.stop()
    print(f"loss {loss.item():.4f}")
    print(f"train_ms={ms:.3f} steps={a.steps} step_ms={ms / a.steps:.4f}")


if __name__ == "__main__":
    main()
