"""tprof with a real PyTorch training loop on the CPU: steps against torch.profiler.schedule,
module ranges, FLOPs against the formulas and torch.profiler's own figures, the dataloader stage
and its recommendation, torch.profiler beside tprof, and the Lightning callback. Traces are read
with Python's json module; the analysis is cross-checked with tests/lib/tprof_ref.py."""
import os
import sys
import time
import warnings

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.profiler import ProfilerAction, ProfilerActivity  # noqa: E402

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
import tprof_ref  # noqa: E402
from conftest import inside, ranges, read_json, run_python, run_traces, step_numbers, trace_events  # noqa
from run_files import artifact  # noqa: E402
from tprof.torch import observer  # noqa: E402

sys.path.insert(0, os.path.join(os.environ.get("TPROF_SOURCE_DIR", os.path.join(
    os.path.dirname(__file__), "..", "..")), "examples"))
from train_torch import train_step  # noqa: E402

RECORDS = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


class Net(nn.Module):
    """A small CNN: conv, then a head of two linear layers."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 8 * 8, 16), nn.ReLU(),
                                  nn.Linear(16, 5))

    def forward(self, x):
        return self.head(self.features(x))


BATCH = 6


def make_data(n, delay=0.0):
    g = torch.Generator().manual_seed(0)
    batches = [(torch.randn(BATCH, 3, 16, 16, generator=g), torch.randint(0, 5, (BATCH,),
                                                                           generator=g))
               for _ in range(n)]
    for b in batches:
        if delay:
            time.sleep(delay)  # a slow loader
        yield b


def train(prof, model, loader):
    """The example's training step (stages forward, backward, optimizer) over loader."""
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        train_step(model, opt, x, y)
        prof.step()


def all_events(run_dir):
    return [e for tr in run_traces(run_dir) for e in trace_events(tr)]


def torch_step_label_shift(tmp_dir):
    """1 when this torch names step k's range ProfilerStep#(k-1) after the first step (torch 1.13
    does; later torch names it #k, as tprof does), else 0. Measured, not guessed from versions."""
    with torch.profiler.profile(activities=[ProfilerActivity.CPU],
                                schedule=torch_schedule(wait=0, warmup=0, active=5)) as p:
        p.step()
        p.step()
    path = os.path.join(tmp_dir, "label_probe.json")
    p.export_chrome_trace(path)
    labels = [e["name"] for e in ranges(trace_events(path)) if e["name"].startswith("ProfilerStep")]
    return 1 if sorted(labels) == ["ProfilerStep#0", "ProfilerStep#0", "ProfilerStep#1"] else 0


def torch_schedule(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.profiler.schedule(**kw)


# ---- steps ----

@pytest.mark.parametrize("sched", [
    dict(wait=1, warmup=1, active=2, repeat=2, skip_first=2),  # docs/SEMANTICS.md's example
    dict(wait=0, warmup=0, active=3, repeat=0, skip_first=0),
    dict(wait=2, warmup=0, active=1, repeat=0, skip_first=1),
    dict(wait=1, warmup=2, active=3, repeat=1, skip_first=0),
], ids=lambda s: "w%(wait)d-wu%(warmup)d-a%(active)d-r%(repeat)d-sf%(skip_first)d" % s)
def test_recorded_steps_follow_torch_schedule(out_dir, sched):
    steps = 14
    with tprof.profile(output_dir=out_dir, summary=False, **sched) as prof:
        train(prof, Net(), make_data(steps))
    fn = torch_schedule(**sched)
    actions = [fn(k) for k in range(steps)]
    want = [k for k, a in enumerate(actions) if a in RECORDS]
    # the step still running at shutdown (k = steps) is saved partial when it records
    if fn(steps) in RECORDS:
        want.append(steps)
    windows = [step_numbers(trace_events(t)) for t in run_traces(prof.run_dir)]
    assert [k for w in windows for k in w] == want
    # each trace is one cycle: it ends with a RECORD_AND_SAVE step (or the partial last one)
    for w in windows:
        assert w[-1] == steps or actions[w[-1]] == ProfilerAction.RECORD_AND_SAVE


def test_epoch_windows(out_dir):
    with tprof.profile(output_dir=out_dir, summary=False, epochs=[1, 3], epoch_steps=2,
                       warmup=1) as prof:
        model = Net()
        for epoch in range(4):
            prof.epoch(epoch)
            train(prof, model, make_data(5))
    traces = run_traces(prof.run_dir)
    assert [os.path.basename(t).split("_", 2)[2] for t in traces] == ["epoch_1.json",
                                                                     "epoch_3.json"]
    # epoch e runs steps 5e .. 5e+4: one warmup step, then two recorded
    assert [step_numbers(trace_events(t)) for t in traces] == [[6, 7], [16, 17]]


# ---- module ranges ----

def test_module_ranges_nest_in_model_order(out_dir):
    model = Net()
    with tprof.profile(model=model, output_dir=out_dir, summary=False) as prof:
        train(prof, model, make_data(3))
    events = ranges(all_events(prof.run_dir))
    mods = sorted((e for e in events if e["name"].startswith("Net")), key=lambda e: e["ts"])
    paths = ["Net" + ("." + p if p else "") for p, _ in model.named_modules()]
    assert len(mods) == 3 * len(paths)
    per_step = [mods[i:i + len(paths)] for i in range(0, len(mods), len(paths))]
    for step in per_step:
        # forward visits the modules in the order they were registered (model order)
        assert [e["name"] for e in step] == paths
        by_name = {e["name"]: e for e in step}
        for name, e in by_name.items():
            if "." in name:
                assert inside(e, by_name[name.rsplit(".", 1)[0]]), name
        forward = [f for f in events if f["name"] == "forward" and inside(by_name["Net"], f)]
        assert len(forward) == 1
    # hooks are removed with the profile
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


# ---- op recording and FLOPs ----

def conv_flops(n, c_in, h, w, c_out, k, stride, pad):
    oh = (h + 2 * pad - k) // stride + 1
    ow = (w + 2 * pad - k) // stride + 1
    return 2 * n * oh * ow * k * k * c_in * c_out


def test_flops_match_formulas_and_torch_profiler(out_dir):
    model = Net()
    x, y = next(make_data(1))

    def one_step():
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()

    with tprof.profile(model=model, record_ops=True, record_shapes=True, output_dir=out_dir,
                       summary=False) as prof:
        one_step()
    events = ranges(all_events(prof.run_dir))

    def tprof_flops(name):
        return sum(e["args"].get("flops", 0) for e in events if e["name"] == name)

    with torch.profiler.profile(activities=[ProfilerActivity.CPU], with_flops=True,
                                record_shapes=True) as p:
        one_step()
    torch_flops = {}
    for e in p.key_averages():
        torch_flops[e.key] = torch_flops.get(e.key, 0) + e.flops

    # the formulas, from the layers' sizes: conv 3->4, k3, s2, p1 on 16x16; linear 256->16, 16->5
    conv = conv_flops(BATCH, 3, 16, 16, 4, 3, 2, 1)
    lin = 2 * BATCH * 256 * 16 + 2 * BATCH * 16 * 5
    # through the op observer the FLOPs are on aten::conv2d, as torch's; through the dispatch
    # mode (below autograd) on aten::convolution
    assert tprof_flops("aten::conv2d") + tprof_flops("aten::convolution") == conv
    assert conv == torch_flops["aten::conv2d"]
    assert tprof_flops("aten::addmm") == lin == torch_flops["aten::addmm"]
    # backward: an mm for each linear layer's input gradient and one for its weight gradient
    back = 2 * (2 * BATCH * 16 * 5) + 2 * (2 * BATCH * 256 * 16)
    assert tprof_flops("aten::mm") == back == torch_flops["aten::mm"]
    # every op torch counts FLOPs for, tprof counts the same (convolution under its aten name)
    for name, f in torch_flops.items():
        if f and name != "aten::conv2d":
            assert tprof_flops(name) == f, name
    assert observer.available() == (tprof_flops("aten::conv2d") == conv)
    # shapes as Kineto writes them, and FLOPs on the op inside its module's range
    addmm = [e for e in events if e["name"] == "aten::addmm"]
    scalars = [[], []] if observer.available() else []  # beta and alpha, as Kineto writes them
    assert sorted(e["args"]["Input Dims"] for e in addmm) == [
        [[5], [BATCH, 16], [16, 5]] + scalars, [[16], [BATCH, 256], [256, 16]] + scalars]
    lin1 = [e for e in events if e["name"] == "Net.head.1"]
    assert len(lin1) == 1 and sum(inside(e, lin1[0]) for e in addmm) == 1
    # categories as Kineto writes them: aten ops cpu_op, module and user ranges user_annotation
    assert {e["cat"] for e in events if e["name"].startswith("aten::")} == {"cpu_op"}
    assert lin1[0]["cat"] == "user_annotation"


def test_flops_of_more_ops_follow_torch(out_dir):
    """bmm, baddbmm, mul, add and a grouped, strided, dilated conv2d: tprof's op ranges and the
    FLOPs functions against torch.profiler on the same calls."""
    a, b, c = torch.randn(3, 4, 5), torch.randn(3, 5, 6), torch.randn(3, 4, 6)
    m, v = torch.randn(7, 8), torch.randn(8)
    inp, w = torch.randn(2, 4, 11, 9), torch.randn(6, 2, 3, 2)

    def ops():
        torch.bmm(a, b)
        torch.baddbmm(c, a, b)
        m * v, v * m, m + v, v + m, m * 2.0, m.add_(v)
        nn.functional.conv2d(inp, w, stride=(2, 1), padding=(1, 2), dilation=(2, 1), groups=2)

    with torch.profiler.profile(activities=[ProfilerActivity.CPU], with_flops=True) as p:
        ops()
    want = {}
    for e in p.key_averages():
        want[e.key] = want.get(e.key, 0) + e.flops
    with tprof.profile(record_ops=True, output_dir=out_dir, summary=False) as prof:
        ops()
    got = {}
    for e in ranges(all_events(prof.run_dir)):
        got[e["name"]] = got.get(e["name"], 0) + e.get("args", {}).get("flops", 0)
    got["aten::conv2d"] = got.get("aten::conv2d", 0) + got.pop("aten::convolution", 0)
    for name in ("aten::bmm", "aten::baddbmm", "aten::mul", "aten::add", "aten::conv2d",
                 "aten::add_"):
        assert got[name] == want[name], name
    # the formulas by hand: torch counts the first input's elements for mul and add
    assert want["aten::bmm"] == 2 * 3 * 4 * 5 * 6
    assert want["aten::mul"] == 7 * 8 + 8 + 7 * 8 and want["aten::add"] == 7 * 8 + 8
    assert want["aten::add_"] == 0
    oh, ow = (11 + 2 - 2 * 2 - 1) // 2 + 1, (9 + 4 - 1 - 1) // 1 + 1
    assert tprof.torch.conv2d(inp, w, (2, 1), (1, 2), (2, 1), 2) == \
        2 * 2 * oh * ow * 3 * 2 * 4 * 6 // 2 == want["aten::conv2d"]
    assert tprof.torch.gemm(m, torch.randn(8, 3)) == 2 * 7 * 8 * 3


def test_op_recording_outside_windows_records_nothing(out_dir):
    model = Net()
    with tprof.profile(record_ops=True, wait=2, active=1, repeat=1, output_dir=out_dir,
                       summary=False) as prof:
        train(prof, model, make_data(5))
    events = ranges(all_events(prof.run_dir))
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    assert [e["name"] for e in steps] == ["ProfilerStep#2"]
    ops = [e for e in events if e["name"].startswith("aten::")]
    assert ops and all(inside(e, steps[0]) for e in ops)


# ---- the dataloader stage ----

def test_dataloader_stage_and_recommendation(out_dir):
    model = Net()
    loader = tprof.torch.dataloader(list(make_data(6)))
    assert len(loader) == 6
    slow = tprof.torch.dataloader(make_data(6, delay=0.02))
    with tprof.profile(output_dir=out_dir, run_id="slow", summary=False) as prof:
        train(prof, model, slow)
    summary = prof.summary()
    dl = [s for s in summary["stages"] if s["stage"] == "dataloader"][0]
    assert dl["count"] == 7  # six batches and the fetch that ends the loop
    assert any(r["id"] == "dataloader" for r in summary["recommendations"])
    # the same figure, independently, from the written trace
    ref = tprof_ref.analyze(run_traces(prof.run_dir)[0])
    assert summary["dataloader_pct"] == pytest.approx(ref["dataloader_pct"], abs=1e-6)
    assert ref["dataloader_pct"] > 5.0
    assert [r["id"] for r in ref["recommendations"]] == [r["id"] for r in
                                                        summary["recommendations"]]
    # tprof.analyze on the run directory reads the same trace
    assert tprof.analyze(prof.run_dir)["dataloader_pct"] == summary["dataloader_pct"]


def test_plain_loop_without_stages_gets_the_loading_advice(out_dir):
    """The issue's case with tprof alone: a plain DataLoader that sleeps, no tprof.stage, no
    tprof.torch.dataloader. No range marks the loader; the lead of each step (before its first
    range, the model's) is the fetch, and the advice says so."""

    class Slow(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            time.sleep(0.01)
            return torch.randn(3, 16, 16), i % 5

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(Slow(), batch_size=8)
    # record_ops=False: the op observer would record torch's own "enumerate(DataLoader)" range,
    # a marked loader (test_torch_observer.py::test_plain_loader_is_a_stage_through_the_observer)
    with tprof.profile(model=model, record_ops=False, output_dir=out_dir, run_id="plain",
                       summary=False) as prof:
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    summary = prof.summary()
    assert all(s["count"] == 0 for s in summary["stages"] if s["stage"] == "dataloader")
    dl = [r for r in summary["recommendations"] if r["id"] == "dataloader"]
    assert dl and "No range marks the data loader" in dl[0]["message"]
    ref = tprof_ref.analyze(run_traces(prof.run_dir)[0])
    # each step's lead holds the next batch's fetch, 8 items sleeping 10 ms each; the last
    # step's holds the fetch that ends the loop
    assert ref["steps"]["lead_us"] >= (ref["steps"]["count"] - 1) * 80000
    assert dl[0]["saving_us"] == ref["steps"]["lead_us"]
    assert "dataloader" in [r["id"] for r in ref["recommendations"]]


def test_analyze_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"name": "x", "ph": "X", "ts": 1, "dur": }]}')
    with pytest.raises(ValueError, match=r"bad\.json: byte \d+: "):
        tprof.analyze(str(bad))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no trace files"):
        tprof.analyze(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match=r"missing\.json: cannot open"):
        tprof.analyze(str(tmp_path / "missing.json"))


def test_analyze_reads_torch_legacy_fixture():
    path = os.path.join(os.environ["TPROF_FIXTURES"], "torch-legacy", "mlp_cpu_300steps.json.gz")
    got = tprof.analyze(path, top_k=3)
    ref = tprof_ref.analyze(path)
    assert got["steps"]["count"] == ref["steps"]["count"] > 0
    assert len(got["top_cpu_ops"]) == 3
    assert [r["name"] for r in got["top_cpu_ops"]] == [r["name"] for r in ref["top_cpu_ops"][:3]]


# ---- torch.profiler beside tprof ----

def test_torch_profiler_on_the_same_schedule(out_dir, tmp_path):
    sched = dict(wait=1, warmup=1, active=2, repeat=2)
    model = Net()
    with tprof.profile(torch_profiler=True, output_dir=out_dir, summary=False, **sched) as prof:
        train(prof, model, make_data(10))
    cfg = read_json(artifact(prof.run_dir, "config.json"))
    assert cfg["gpu"] == "off"  # one CUPTI subscriber: torch.profiler's
    assert len(prof.torch_traces) == 2
    assert all(os.path.dirname(t) == os.path.join(prof.run_dir, "torch") for t in prof.torch_traces)
    fn = torch_schedule(**sched)
    want = [k for k in range(10) if fn(k) in RECORDS]
    torch_steps = [k for t in prof.torch_traces for k in step_numbers(trace_events(t))]
    tprof_steps = [k for t in run_traces(prof.run_dir) for k in step_numbers(trace_events(t))]
    assert tprof_steps == want
    assert torch_steps == [k - torch_step_label_shift(str(tmp_path)) for k in want]
    # tprof's analysis of torch's windows
    for t in prof.torch_traces:
        got = tprof.analyze(t)
        assert got["steps"]["count"] == len(step_numbers(trace_events(t)))
        assert got["steps"]["count"] == tprof_ref.analyze(t)["steps"]["count"]
        assert any(r["name"].startswith("aten::") for r in got["top_cpu_ops"])


def test_torch_profiler_conflicts_leave_the_run_unprofiled(out_dir):
    # a configuration error is one tprof: line and an unprofiled run, never an exception
    for keys, message in ((dict(gpu="on"), "only one CUPTI subscriber"),
                          (dict(epochs=[0]), "epoch windows")):
        prof = tprof.profile(torch_profiler=True, output_dir=out_dir, **keys).start()
        try:
            assert not prof.enabled and message in prof.error
        finally:
            prof.stop()
    assert not tprof._tprof.is_active() and not os.path.exists(out_dir)


def test_torch_profiler_running_turns_tprof_gpu_off(out_dir):
    with torch.profiler.profile(activities=[ProfilerActivity.CPU]):
        with tprof.profile(output_dir=out_dir, summary=False) as prof:
            pass
    assert read_json(artifact(prof.run_dir, "config.json"))["gpu"] == "off"


# ---- CUDA memory counters ----

@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_memory_counters(out_dir):
    model = Net().cuda()
    data = [(x.cuda(), y.cuda()) for x, y in make_data(4)]
    with tprof.profile(output_dir=out_dir, summary=False) as prof:
        train(prof, model, data)
    events = all_events(prof.run_dir)
    d = torch.cuda.current_device()
    alloc = [e for e in events if e.get("ph") == "C" and e["name"] == "cuda:%d allocated" % d]
    peak = [e for e in events if e.get("ph") == "C" and e["name"] == "cuda:%d peak allocated" % d]
    assert len(alloc) == len(peak) == 5  # each step's end, and the end of the run
    assert all(0 < a["args"]["value"] <= p["args"]["value"] for a, p in zip(alloc, peak))


# ---- Lightning ----

class FakeTrainer:
    current_epoch = 0


def test_lightning_callback_logic(out_dir):
    """The callback's hooks in Lightning's order, without Lightning."""
    model = Net()
    cb = tprof.torch.CallbackLogic(profile_epochs=[1], profile_steps=2, warmup_steps=1,
                                   output_dir=out_dir, log_top_k_ops=3, summary=False)
    trainer = FakeTrainer()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    cb.on_train_start(trainer, model)
    for epoch in range(2):
        trainer.current_epoch = epoch
        cb.on_train_epoch_start(trainer, model)
        for i, (x, y) in enumerate(make_data(4)):
            cb.on_train_batch_start(trainer, model, (x, y), i)
            loss = nn.functional.cross_entropy(model(x), y)
            cb.on_before_backward(trainer, model, loss)
            loss.backward()
            cb.on_after_backward(trainer, model)
            cb.on_before_optimizer_step(trainer, model, opt)
            opt.step()
            opt.zero_grad()
            cb.on_train_batch_end(trainer, model, loss, (x, y), i)
        cb.on_train_epoch_end(trainer, model)
    cb.on_train_end(trainer, model)
    traces = run_traces(cb.profile.run_dir)
    assert len(traces) == 1 and traces[0].endswith("epoch_1.json")
    events = ranges(trace_events(traces[0]))
    assert step_numbers(events) == [5, 6]
    names = [e["name"] for e in events]
    for stage in ("forward", "backward", "optimizer", "dataloader"):
        assert names.count(stage) >= 2, stage
    assert "Net.head.1" in names  # the LightningModule's submodules
    summary = cb.profile.summary()
    assert len(summary["top_cpu_ops"]) <= 3


def test_lightning_callback_with_lightning(out_dir):
    pl = None
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            pl = __import__(name, fromlist=["Trainer"])
            break
        except ImportError:
            continue
    if pl is None:
        pytest.skip("PyTorch Lightning is not installed")

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = Net()

        def training_step(self, batch, i):
            x, y = batch
            return nn.functional.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    data = torch.utils.data.DataLoader(list(make_data(8)), batch_size=None)
    cb = tprof.torch.Callback(profile_epochs=[1], profile_steps=3, warmup_steps=1,
                              output_dir=out_dir, summary=False)
    trainer = pl.Trainer(max_epochs=2, callbacks=[cb], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, accelerator="cpu")
    trainer.fit(Module(), data)
    traces = run_traces(cb.profile.run_dir)
    assert len(traces) == 1
    assert step_numbers(trace_events(traces[0])) == [9, 10, 11]


def test_profile_does_not_import_lightning():
    """tprof.profile imports tprof.torch when torch is loaded; that must not import Lightning
    (lightning.fabric imports torch._dynamo: seconds, and with torch.profiler(with_stack=True)
    around it hundreds of thousands of Python events). tprof.torch.Callback imports it on use."""
    pytest.importorskip("lightning")
    r = run_python("""
        import sys, tempfile, time, torch, tprof
        t = time.perf_counter()
        with tprof.profile(output_dir=tempfile.mkdtemp(), summary=False):
            pass
        print("SECONDS", time.perf_counter() - t)
        print("LIGHTNING", any(m.split(".")[0] in ("lightning", "pytorch_lightning")
                               for m in sys.modules))
        import tprof.torch
        print("CALLBACK", tprof.torch.Callback.__name__)
        from tprof.torch import LightningProfiler
        print("PROFILER", LightningProfiler is tprof.torch.LightningProfiler)
    """)
    assert r.returncode == 0, r.stderr
    assert "LIGHTNING False" in r.stdout
    assert "CALLBACK Callback" in r.stdout and "PROFILER True" in r.stdout
