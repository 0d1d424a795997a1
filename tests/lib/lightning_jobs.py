"""The Lightning training scripts the Python tests run as jobs (`tprof run`, DDP on the CPU):
one small LightningModule, `Net` (a linear layer on 8 features, 3 classes, SGD), and the
`__main__` block each test gives it. Shared by tests/python/test_run.py,
tests/python/test_lightning_ddp.py and tests/python/test_ranks_shared.py."""

import textwrap

__all__ = ["lightning_script"]

_HEAD = """
import sys
import torch
import lightning.pytorch as pl
{imports}
torch.set_num_threads(1)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(8, 3)

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


if __name__ == "__main__":
"""


def lightning_script(main: str, imports: str = "") -> str:
    """The text of a script that defines `Net` and runs `main` (Python, at any indentation) as its
    `__main__` block; `imports` (lines) follow the script's own imports of sys, torch and
    lightning.pytorch as pl."""
    head = _HEAD.format(imports=textwrap.dedent(imports).strip() + "\n" if imports.strip() else "")
    return head + textwrap.indent(textwrap.dedent(main).strip() + "\n", "    ")
