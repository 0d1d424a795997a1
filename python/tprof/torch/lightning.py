"""A PyTorch Lightning callback: tprof over Trainer.fit with the seed options, the stages taken
from Lightning's hooks and the LightningModule's submodules as ranges.

CallbackLogic holds the behaviour and needs no Lightning; lightning_callback() joins it with
Lightning's Callback class when Lightning (lightning.pytorch or pytorch_lightning) is installed.
"""
import importlib

import tprof
from tprof import _tprof

# Lightning's hooks bound the stages: dataloader (between batches: the loader's fetch), forward
# (batch start to backward), backward, optimizer (its step to the batch's end).
_STAGES = {name: _tprof.range(name) for name in ("dataloader", "forward", "backward", "optimizer")}


class CallbackLogic:
    """tprof for a Lightning Trainer.

    enabled, profile_epochs (the epochs to record, Lightning's 0-based current_epoch),
    profile_steps (steps recorded per listed epoch), warmup_steps, record_shapes, output_dir,
    log_top_k_ops (rows of the summary's tables) are the seed's options; with_modules=True makes
    the LightningModule's submodules ranges; any other keyword is a tprof configuration key.
    export_chrome_trace=False is accepted but traces are always written (docs/PYTHON.md).
    """

    def __init__(self, enabled=True, profile_epochs=None, profile_steps=None, warmup_steps=None,
                 record_shapes=None, output_dir=None, export_chrome_trace=True,
                 log_top_k_ops=None, with_modules=True, **config):
        super().__init__()
        self.keys = dict(config, enabled=enabled, epochs=profile_epochs,
                         epoch_steps=profile_steps, warmup=warmup_steps,
                         record_shapes=record_shapes, output_dir=output_dir, top_k=log_top_k_ops)
        self.export_chrome_trace = export_chrome_trace
        self.with_modules = with_modules
        self.profile = None
        self._stage = None

    def _switch(self, stage):
        """Ends the open stage range, if any, and begins `stage` (None: none)."""
        if self._stage is not None:
            self._stage.end()
        self._stage = _STAGES[stage] if stage else None
        if self._stage is not None:
            self._stage.begin()

    def _stop(self):
        self._switch(None)
        if self.profile is not None:
            self.profile.stop()

    def on_train_start(self, trainer, pl_module):
        if not self.export_chrome_trace:
            _tprof.warn("export_chrome_trace=False is not supported: traces are written")
        model = pl_module if self.with_modules else None
        self.profile = tprof.profile(model=model, **self.keys).start()

    def on_train_epoch_start(self, trainer, pl_module):
        self.profile.epoch(trainer.current_epoch)
        self._switch("dataloader")

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx, *args):
        self._switch("forward")

    def on_before_backward(self, trainer, pl_module, loss):
        self._switch("backward")

    def on_after_backward(self, trainer, pl_module):
        self._switch(None)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, *args):
        self._switch("optimizer")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, *args):
        self._switch(None)
        self.profile.step()
        self._switch("dataloader")

    def on_train_epoch_end(self, trainer, pl_module):
        self._switch(None)

    def on_train_end(self, trainer, pl_module):
        self._stop()

    def on_exception(self, trainer, pl_module, exception):
        self._stop()


def lightning_callback():
    """CallbackLogic as a Lightning Callback class, or None without Lightning."""
    for module in ("lightning.pytorch", "pytorch_lightning"):
        try:
            base = importlib.import_module(module).Callback
        except ImportError:
            continue
        return type("Callback", (CallbackLogic, base),
                    {"__doc__": CallbackLogic.__doc__, "__module__": __name__})
    return None
