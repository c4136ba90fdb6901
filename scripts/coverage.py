"""Print how much of PyTorch's public surface ferro has, per namespace (needs torch installed).

    python scripts/coverage.py              # the table (Markdown), as docs/porting.md publishes it
    python scripts/coverage.py --missing    # and the names ferro lacks, per namespace
    python scripts/coverage.py --stale      # the omission lines that no longer omit anything
    python scripts/coverage.py --write docs/porting.md   # refresh the table between the page's markers

The measurement and the file of deliberate omissions live in ``ferro.testing._coverage``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ferro.testing import _coverage


def main(argv: list[str] | None = None) -> int:
    """Print the table (and what was asked for); exit status 1 when an omission line is stale."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--missing", action="store_true", help="list the names ferro lacks")
    parser.add_argument("--stale", action="store_true", help="list the stale omission lines")
    parser.add_argument("--write", metavar="PAGE", help="put the table between the coverage markers of PAGE")
    parser.add_argument("namespace", nargs="*", help="only these namespaces (default: all)")
    args = parser.parse_args(argv)
    omissions = _coverage.load_omissions()
    results = [_coverage.measure(ns, omissions) for ns in (args.namespace or _coverage.NAMESPACES)]
    text = _coverage.table(results)
    print(text)
    if args.write:
        page = Path(args.write)
        before, start, rest = page.read_text().partition(_coverage.START)
        _, end, after = rest.partition(_coverage.END)
        if not start or not end:
            parser.error(f"{page} has no {_coverage.START} ... {_coverage.END} markers")
        page.write_text(f"{before}{start}\n{text}\n{end}{after}")
    if args.missing:
        for c in results:
            print(f"\n{c.namespace} ({len(c.missing)} missing): {' '.join(c.missing)}")
    bad = _coverage.stale(omissions)
    if args.stale or bad:
        print("\n".join(["", *bad]) if bad else "\nno stale omission lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
