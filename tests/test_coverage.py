"""The coverage of PyTorch's surface (``ferro.testing._coverage``): the omissions file is well formed and has
no stale line, the measurement splits torch's names truly, and docs/porting.md publishes today's table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ferro.testing import _coverage

torch = pytest.importorskip("torch")

DOC = Path(__file__).resolve().parent.parent / "docs" / "porting.md"


def test_omissions_parse_with_reasons() -> None:
    omissions = _coverage.load_omissions()
    assert omissions, "the omissions file lists nothing"
    assert all(o.reason.strip() for o in omissions)


def test_no_stale_omission() -> None:
    assert _coverage.stale() == []


def test_stale_lines_are_caught(tmp_path: Path) -> None:
    path = tmp_path / "omissions.txt"
    path.write_text("torch tensor ferro has it\ntorch no_such_name_in_torch torch has none\n"
                    "torch choose_qparams_optimized quantization\n")
    found = _coverage.stale(_coverage.load_omissions(path))
    assert [s.split(": ", 2)[1] for s in found] == ["torch tensor", "torch no_such_name_in_torch"]


def test_bad_lines_refused(tmp_path: Path) -> None:
    path = tmp_path / "omissions.txt"
    path.write_text("torch quantize_per_tensor\n")
    with pytest.raises(ValueError, match="REASON"):
        _coverage.load_omissions(path)
    path.write_text("torchvision resnet50 not ours\n")
    with pytest.raises(ValueError, match="unknown namespace"):
        _coverage.load_omissions(path)


@pytest.mark.parametrize("namespace", list(_coverage.NAMESPACES))
def test_measure_splits_torch_names(namespace: str) -> None:
    cov = _coverage.measure(namespace)
    names = _coverage.torch_names(namespace)
    assert sorted(cov.present + cov.omitted + cov.missing) == sorted(names)
    space = _coverage._resolve(_coverage.NAMESPACES[namespace][1])
    if space is None:  # ferro has no such namespace yet: nothing is present
        assert not cov.present
        return
    assert all(hasattr(space, n) for n in cov.present)
    assert not any(hasattr(space, n) for n in cov.missing + cov.omitted)


def test_known_names() -> None:
    assert "relu" in _coverage.measure("nn.functional").present
    assert "quantize_per_tensor" in _coverage.measure("torch").present
    assert "fbgemm_linear_int8_weight" in _coverage.measure("torch").omitted
    assert "Linear" in _coverage.torch_names("nn") and "Adam" in _coverage.torch_names("optim")


def test_docs_table_is_current() -> None:
    """docs/porting.md carries the table as the script prints it today."""
    text = DOC.read_text()
    table = _coverage.table([_coverage.measure(ns) for ns in _coverage.NAMESPACES])
    assert table in text, ("docs/porting.md's coverage table is out of date: paste the output of "
                           "`python scripts/coverage.py` into it")
    assert re.search(r"python scripts/coverage\.py", text)
