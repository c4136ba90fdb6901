"""Train the 64-256-256-10 MLP on scikit-learn's digits: ``python examples/mlp_digits.py [--backend cpu]``.

The plain-script form of a training loop: DataLoader, SGD with momentum, a cosine
learning-rate schedule, evaluation, and a checkpoint round trip.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import ferro
from ferro import nn
from ferro.data import DataLoader, TensorDataset
from ferro.demo import evaluate, load_digits, make_mlp


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description="MLP on the digits")
    p.add_argument("--backend", default=None)
    p.add_argument("--epochs", type=int, default=15)
    args = p.parse_args(argv)
    dev = ferro.device(args.backend) if args.backend else ferro.backends.current_device()
    ferro.manual_seed(0)
    x_train, y_train, x_test, y_test = load_digits(dev, images=False)
    model = make_mlp().to(dev)
    opt = ferro.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    sched = ferro.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True,
                        generator=ferro.Generator().manual_seed(0))
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
        test_loss, acc = evaluate(model, x_test, y_test)
        print(f"epoch {epoch + 1}: test loss {test_loss:.4f}, accuracy {acc:.2%}")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp.safetensors")
        ferro.save(model.state_dict(), path)
        fresh = make_mlp().to(dev)
        fresh.load_state_dict(ferro.load(path, map_location=dev))
    reloaded = evaluate(fresh, x_test, y_test)[1]
    print(f"reloaded from a checkpoint: accuracy {reloaded:.2%}")
    return reloaded


if __name__ == "__main__":
    main()
