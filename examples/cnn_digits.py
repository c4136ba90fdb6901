"""Train the digits CNN: ``python examples/cnn_digits.py [--backend opencl] [--epochs 12]``.

The same training as ``ferro demo``, which is this script's library form
(``ferro.demo.run``): Adam, cosine learning rate, a progress bar, a checkpoint.
"""

from __future__ import annotations

import argparse

from ferro.demo import run


def main(argv: list[str] | None = None) -> float:
    p = argparse.ArgumentParser(description="CNN on the digits")
    p.add_argument("--backend", default=None)
    p.add_argument("--epochs", type=int, default=12)
    args = p.parse_args(argv)
    return run(args.backend, epochs=args.epochs).reloaded_accuracy


if __name__ == "__main__":
    main()
