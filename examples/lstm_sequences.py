"""A small LSTM learns a sequence task: ``python examples/lstm_sequences.py [--backend cpu]``.

Synthetic data, made here: sequences of 12 random digits 0-9, embedded, read by
a one-layer LSTM; the label is whether the digits' sum is above the expected
value (54). The model must carry a running sum through time.
"""

from __future__ import annotations

import argparse

import ferro
from ferro import nn


class SumClassifier(nn.Module):
    """Embedding -> LSTM -> linear head on the last hidden state."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.lstm = nn.LSTM(8, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, tokens: ferro.Tensor) -> ferro.Tensor:
        _, (h, _) = self.lstm(self.embed(tokens))
        return self.head(h[-1])


def make_data(n: int, device: ferro.device, generator: ferro.Generator) -> tuple[ferro.Tensor, ferro.Tensor]:
    tokens = ferro.randint(0, 10, (n, 12), generator=generator).to(device)
    return tokens, (tokens.sum(1) > 54).long()


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description="LSTM on synthetic digit sums")
    p.add_argument("--backend", default=None)
    p.add_argument("--epochs", type=int, default=20)
    args = p.parse_args(argv)
    dev = ferro.device(args.backend) if args.backend else ferro.backends.current_device()
    ferro.manual_seed(0)
    g = ferro.Generator().manual_seed(0)
    x_train, y_train = make_data(2048, dev, g)
    x_test, y_test = make_data(512, dev, g)
    model = SumClassifier().to(dev)
    opt = ferro.optim.Adam(model.parameters(), lr=1e-2)
    loader = ferro.data.DataLoader(ferro.data.TensorDataset(x_train, y_train), batch_size=64, shuffle=True,
                                   generator=g)
    acc = 0.0
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        model.eval()
        with ferro.no_grad():
            acc = (model(x_test).argmax(1) == y_test).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.4f}, test accuracy {acc:.2%}")
    return acc


if __name__ == "__main__":
    main()
