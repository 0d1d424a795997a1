"""The use cases' configurations, verbatim, through tprof.Config (python/ext/py_config.c), the path
every Python integration's keys take (issue 11, item 5): the decorator's keys, Hydra's
overrides and `--profiling.with_stack False` command lines, and a YAML `profiling:` section
without `enabled`. The C side of each form is tested in tests/unit/test_config.c."""
import json

import pytest

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
