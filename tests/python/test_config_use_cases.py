"""The use cases' configurations, verbatim, through tprof.Config (python/ext/py_config.c), the path
every Python integration's keys take (issue 11, item 5): the decorator's keys, Hydra's
overrides and `--profiling.with_stack False` command lines, and a YAML `profiling:` section
without `enabled`. The C side of each form is tested in tests/unit/test_config.c."""
import json
import sys

import pytest

from conftest import read_json, run_traces, step_numbers, trace_events
from run_files import artifact
from tprof import _tprof


def effective(cfg):
    return json.loads(cfg.to_json())


def test_decorator_keys():
    cfg = _tprof.Config()
    keys = {"skip_first": 1, "wait": 1, "warmup": 1, "active": 2, "repeat": 1, "with_stack": True,
            "with_flops": True, "with_modules": False, "nsight_enabled": True,
            "nsight_output": "train"}
    for key, value in keys.items():
        cfg.set(key, value, "decorator")
    d = effective(cfg)
    assert d["nsight"] is True and d["nsight_output"] == "train"
    assert d["with_stack"] is True and d["with_modules"] is False and d["with_flops"] is True
    assert (d["skip_first"], d["wait"], d["warmup"], d["active"], d["repeat"]) == (1, 1, 1, 2, 1)
    assert cfg.schedule()["mode"] == "steps"


def test_hydra_overrides_and_python_booleans():
    cfg = _tprof.Config()
    argv = ["train.py", "profiling.enabled=true", "profiling.output_dir=/tmp/prof",
            "profiling.wait_steps=1", "profiling.warmup_steps=1", "profiling.active_steps=3",
            "profiling.repeat_cycles=2", "profiling.schedule_every_n_steps=5",
            "--profiling.with_stack", "False", "trainer.max_epochs=3"]
    cfg.load_args(argv)
    assert argv == ["train.py", "trainer.max_epochs=3"]
    d = effective(cfg)
    assert d["enabled"] is True and d["output_dir"] == "/tmp/prof" and d["with_stack"] is False
    assert (d["wait"], d["warmup"], d["active"], d["repeat"]) == (1, 1, 3, 2)
    cfg.validate()  # 1 + 1 + 3 is the cycle of 5
    assert cfg.schedule()["wait"] == 1


def test_unknown_key_stays_an_error():
    with pytest.raises(_tprof.ConfigError, match="unknown key profiling.with_stak"):
        _tprof.Config().load_args(["train.py", "--profiling.with_stak", "False"])


def test_yaml_section_without_enabled_enables(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text("profiling:\n  wait: 1\n  warmup: 1\n  active: 3\n  repeat: 2\n"
                    "  record_shapes: true\n  profile_memory: true\n  with_stack: true\n")
    cfg = _tprof.Config()
    cfg.load_yaml(path)
    assert effective(cfg)["enabled"] is True and effective(cfg)["with_stack"] is True
    path.write_text("profiling:\n  with_stack: true\n  enabled: false\n")
    cfg = _tprof.Config()
    cfg.load_yaml(str(path).encode())  # a bytes path is a path
    assert effective(cfg)["enabled"] is False


# ---- issue 23: the four forms each run as their use case writes them, profiled ----

def test_cycle_with_wait_only_is_profiled():
    """profiling.schedule_every_n_steps=50 with profiling.wait_steps=1, as written: active is the
    rest of the cycle (docs/CONFIG.md, "A cycle of N steps"), no error."""
    cfg = _tprof.Config()
    cfg.load_args(["train.py", "profiling.schedule_every_n_steps=50", "profiling.wait_steps=1",
                   "--profile"])
    cfg.validate()
    s = cfg.schedule()
    assert (s["mode"], s["wait"], s["warmup"], s["active"]) == ("steps", 1, 0, 49)


def recorded_steps(run_dir):
    events = [e for path in run_traces(run_dir) for e in trace_events(path)]
    return step_numbers(events)


def torch_recorded(steps, **schedule):
    """The steps torch.profiler.schedule records (an independent computation of the rule)."""
    torch_profiler = pytest.importorskip("torch.profiler")
    rule = torch_profiler.schedule(**schedule)
    kept = (torch_profiler.ProfilerAction.RECORD, torch_profiler.ProfilerAction.RECORD_AND_SAVE)
    return [k for k in range(steps) if rule(k) in kept]


def test_cycle_that_cannot_hold_runs_the_closest_schedule(out_dir, caplog):
    """All three given with another sum: one line naming the closest schedule, and the run is
    profiled with it (never "unprofiled"), the steps torch.profiler's rule records for it."""
    import tprof

    cfg, rest = tprof.config_from_args(
        ["train.py", "profiling.enabled=true", "profiling.wait_steps=1",
         "profiling.warmup_steps=1", "profiling.active_steps=3", "profiling.repeat_cycles=2",
         "profiling.schedule_every_n_steps=10", ("profiling.output_dir=" + out_dir),
         "profiling.summary=false"])
    assert rest == ["train.py"]
    with tprof.profile(cfg) as prof:
        for _ in range(25):
            tprof.step()
    # the library's lines reach Python's logging in a Python process (docs/PYTHON.md, "Messages")
    err = [r.getMessage() for r in caplog.records if r.name == "tprof"]
    assert err == [("tprof: profiling.schedule_every_n_steps = 10 (from "
                    "profiling.schedule_every_n_steps) cannot hold wait 1 + warmup 1 + active 3 "
                    "(from profiling.wait_steps, profiling.warmup_steps, "
                    "profiling.active_steps): profiling the closest schedule, a cycle of 10 "
                    "steps with wait 6, warmup 1, active 3")]
    assert prof.enabled and prof.error is None
    assert recorded_steps(prof.run_dir) == torch_recorded(25, wait=6, warmup=1, active=3,
                                                          repeat=2) == [7, 8, 9, 17, 18, 19]


def test_profiler_flag_on_and_off():
    """--profiler on (another use case's flag): a boolean; its other values are the program's."""
    import tprof

    cfg, rest = tprof.config_from_args(["train.py", "--profiler", "on", "--lr", "0.1"])
    assert effective(cfg)["enabled"] is True and rest == ["train.py", "--lr", "0.1"]
    cfg, rest = tprof.config_from_args(["train.py", "--profiler=off"])
    assert effective(cfg)["enabled"] is False and rest == ["train.py"]
    cfg, rest = tprof.config_from_args(["train.py", "--profiler", "advanced"])
    assert effective(cfg)["enabled"] is False and rest == ["train.py", "--profiler", "advanced"]


HYDRA_BLOCK = {"enabled": True, "wait_steps": 1, "warmup_steps": 1, "active_steps": 3,
               "repeat_cycles": 2, "schedule_every_n_steps": 10, "record_shapes": True}


@pytest.mark.parametrize("kind", ["LightningProfiler", "Callback"])
def test_hydra_block_as_lightning_keywords(out_dir, kind):
    """LightningProfiler(**cfg.profiling) / Callback(**cfg.profiling) of the Hydra use case's
    block: warmup_steps is the step schedule's warmup there (Hydra's alias), not an epoch
    window's, so the block runs profiled with the step schedule it means."""
    pytest.importorskip("lightning.pytorch")
    import tprof.torch
    from test_lightning import Net, loader, trainer

    integration = getattr(tprof.torch, kind)(output_dir=out_dir, summary=False, **HYDRA_BLOCK)
    if kind == "Callback":
        trainer([integration], limit_val_batches=0).fit(Net(), loader(25))
        session = integration.profile
    else:
        trainer(profiler=integration, limit_val_batches=0).fit(Net(), loader(25))
        session = integration.session
    assert session is not None and session.enabled
    config = read_json(artifact(session.run_dir, "config.json"))
    assert config["epochs"] == [] and config["warmup"] == 1
    # the closest schedule of a cycle of 10 with warmup 1, active 3: wait 6
    assert recorded_steps(session.run_dir) == torch_recorded(25, wait=6, warmup=1, active=3,
                                                             repeat=2)


def test_callbacks_profiler_override_reaches_the_callback(out_dir, monkeypatch):
    """callbacks.profiler.enabled=true (a Hydra override of the use case's callback group)
    reaches a callback made in code, without Hydra's instantiate; sys.argv keeps it (Hydra's)."""
    pytest.importorskip("lightning.pytorch")
    import tprof.torch
    from test_lightning import Net, loader, trainer

    argv = ["train.py", "callbacks.profiler.enabled=true", "callbacks.profiler.profile_steps=2",
            "callbacks.profiler._target_=tprof.torch.Callback"]
    monkeypatch.setattr(sys, "argv", list(argv))
    cb = tprof.torch.Callback(enabled=False, profile_epochs=[0], output_dir=out_dir,
                              summary=False)
    trainer([cb], limit_val_batches=0).fit(Net(), loader(6))
    assert sys.argv == argv
    assert cb.profile is not None and cb.profile.enabled
    config = read_json(artifact(cb.profile.run_dir, "config.json"))
    assert config["enabled"] is True and config["epoch_steps"] == 2 and config["epochs"] == [0]
    assert recorded_steps(cb.profile.run_dir) == [0, 1]
    # and through tprof.config_from_args, for a loop of its own
    import tprof

    cfg, rest = tprof.config_from_args(list(argv))
    assert effective(cfg)["enabled"] is True and effective(cfg)["epoch_steps"] == 2
    assert rest == ["train.py", "callbacks.profiler._target_=tprof.torch.Callback"]
