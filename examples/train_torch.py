"""train_torch.py - tprof's PyTorch demo: a small CNN learns to classify generated images, with a
data loader slow enough that tprof's summary flags it.

Ten classes of 3x32x32 images, each class a coloured stripe pattern under noise. The Dataset
"decodes" every sample with a deliberate delay (--decode-ms) and the DataLoader runs in the main
process (--workers 0), so data loading dominates each step: the summary's dataloader stage and
its recommendation say so. Run again with --workers 4 to see the stage shrink.

    python3 examples/train_torch.py --profile
    python3 examples/train_torch.py --profile --profiling.wait 2 --profiling.active 5 --workers 4
    TPROF_ENABLED=1 TPROF_RECORD_SHAPES=1 python3 examples/train_torch.py --record-ops

Every tprof option works (--profile, --profiling.<key> <value>, TPROF_<KEY>, a YAML file through
--profiling.config); a bad one is reported in one line and the program exits with status 2.
The traces and artifacts go to tprof_runs/<run_id>/ (docs/PYTHON.md).
"""
import argparse
import sys
import time

import torch
from torch import nn

import tprof
import tprof.torch

CLASSES = 10


class Stripes(torch.utils.data.Dataset):
    """Generated images: class c is a stripe of colour c at height c, plus noise."""

    def __init__(self, n, decode_ms, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, CLASSES, (n,), generator=g)
        self.noise = torch.randn(n, 3, 32, 32, generator=g) * 0.5
        self.colours = torch.rand(CLASSES, 3, generator=g)
        self.decode_s = decode_ms / 1000.0

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        time.sleep(self.decode_s)  # stands for JPEG decoding and augmentation
        c = int(self.labels[i])
        img = self.noise[i].clone()
        img[:, 3 * c:3 * c + 3, :] += self.colours[c].view(3, 1, 1) * 3
        return img, c


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(),
                                        nn.Linear(64, CLASSES))

    def forward(self, x):
        return self.classifier(self.features(x))


def train_step(model, opt, x, y):
    """One step of SGD, each stage a tprof range; returns the loss."""
    with tprof.stage("forward"):
        loss = nn.functional.cross_entropy(model(x), y)
    with tprof.stage("backward"):
        opt.zero_grad()
        loss.backward()
    with tprof.stage("optimizer"):
        opt.step()
    return loss


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=30, help="steps per epoch")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--persistent-workers", action="store_true",
                   help="keep the workers between epochs (with --workers)")
    p.add_argument("--decode-ms", type=float, default=1.0, help="delay per sample loaded")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--record-ops", action=argparse.BooleanOptionalAction, default=None,
                   help="a range per op, with FLOPs (default: on where tprof's op observer is "
                        "built; --no-record-ops turns it off)")
    p.add_argument("--log-every", type=int, default=10)
    return p.parse_args(argv)


def main():
    try:
        cfg, argv = tprof.config_from_args()  # consumes tprof's arguments from sys.argv
    except tprof.ConfigError as e:
        print("tprof: %s" % e, file=sys.stderr)
        return 2
    args = parse(argv[1:])
    torch.manual_seed(0)
    data = Stripes(args.steps * args.batch, args.decode_ms)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers,
                                         persistent_workers=args.persistent_workers)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    step = 0
    with tprof.profile(cfg, model=model, record_ops=args.record_ops) as prof:
        for epoch in range(args.epochs):
            prof.epoch(epoch)
            for x, y in tprof.torch.dataloader(loader):
                loss = train_step(model, opt, x, y)
                tprof.counter("loss", loss.item())
                prof.step()
                step += 1
                if step % args.log_every == 0:
                    print("epoch %d step %4d loss %.4f" % (epoch, step, loss.item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
