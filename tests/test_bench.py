"""``ferro bench``: the benchmark suite as a command, its JSON, its table, its plot and its errors.

Each run is the real command in a fresh interpreter, on the smallest budget
(``--quick`` or one short round) and on the two 64x64 cases, so a test takes
seconds. Timings are never asserted: only that every contender took part,
that the numbers are consistent with one another, and what is reported when
something is missing.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import clean_env, run_json

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--case", "a + b (64x64", "--backend", "cpu", "--pause", "0"]  # the two 64x64 cases on ferro:cpu
CASE, GRAD_CASE = "a + b (64x64 f32)", "a + b (64x64 f32, requires_grad)"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def bench(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``ferro bench ARGS`` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "ferro.cli", "bench", *args], capture_output=True, text=True,
                          env=clean_env(env), cwd=cwd, timeout=300)


def times(entry: dict[str, Any]) -> dict[str, float]:
    return {name: res["seconds"] for name, res in entry["results"].items()}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, dict[str, Any], Path]:
    """One ``ferro bench --quick`` on the 64x64 cases, with --json, --plot and --markdown."""
    out = tmp_path_factory.mktemp("bench")
    proc = bench("--quick", *SMALL, "--json", str(out / "out.json"), "--plot", str(out / "out.png"), "--markdown")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((out / "out.json").read_text()), out / "out.png"


def test_quick_run_reports_the_cpu_column_and_the_references(quick_run: Any) -> None:
    proc, report, _ = quick_run
    assert [e["name"] for e in report["cases"]] == [CASE, GRAD_CASE]
    assert "imports" not in report, "--case selects the import rows only when it says 'import'"
    plain, grad = report["cases"]
    refs = {"numpy", "torch"} if HAS_TORCH else {"numpy"}
    assert set(plain["results"]) == refs | {"ferro:cpu"}
    assert set(grad["results"]) == refs - {"numpy"} | {"ferro:cpu"}, "NumPy records no graph: no requires_grad cell"
    for entry in report["cases"]:
        for name, res in entry["results"].items():
            assert res["seconds"] > 0 and res["min_s"] > 0 and res["loops"] >= 1, (entry["name"], name)
            assert res["rounds"] == 3, "--quick runs 3 rounds"
            assert res["min_s"] <= res["median_s"] and res["seconds"] == res["min_s"], "the best round by default"
    assert report["meta"]["judged"] == "ferro:cpu"
    assert report["meta"]["ferro:cpu"]["device"], "the device ferro ran on is recorded"
    if HAS_TORCH:
        for entry in report["cases"]:
            t = times(entry)
            assert entry["ratios"]["ferro:cpu"] == pytest.approx(t["ferro:cpu"] / t["torch"])
            assert entry["pass"] == (entry["ratios"]["ferro:cpu"] <= (1.2 if entry is plain else 1.5))
    else:
        assert any("torch column left out" in n for n in report["meta"]["notes"])
    header = "| case | " + " | ".join(sorted(refs)) + " | ferro:cpu | ferro:cpu ratio | target (ferro) | check |"
    assert header in proc.stdout.splitlines(), proc.stdout
    assert f"| {CASE} | " in proc.stdout


def test_plot_writes_a_png_with_a_bar_per_contender(quick_run: Any) -> None:
    from matplotlib.image import imread

    from ferro.bench._plot import _FERRO_COLOURS, _REFERENCE_COLOURS
    _, _, png = quick_run
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 10_000, "a chart, not an empty canvas"
    pixels = imread(png)
    height, width = pixels.shape[:2]
    assert width > height > 200, "two panels side by side"
    rgb = (pixels[..., :3] * 255).round().astype(int).reshape(-1, 3)
    names = ["numpy", "torch"] if HAS_TORCH else ["numpy"]
    colours = [_REFERENCE_COLOURS[n] for n in names] + [_FERRO_COLOURS[0]]  # ferro:cpu, the first ferro column
    for colour in colours:
        want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
        share = (abs(rgb - want).max(axis=1) <= 1).mean()
        assert share > 0.002, f"the bar of colour {colour} is missing"


def test_no_torch_is_an_absent_column_and_no_plot_imports_no_matplotlib(tmp_path: Path) -> None:
    """A missing reference is a note, never a crash; the import rows run; matplotlib waits for --plot."""
    out = tmp_path / "out.json"
    args = [*SMALL, "--case", "import", "--rounds", "1", "--budget", "0.01", "--import-runs", "1", "--json", str(out)]
    got = run_json(f"""
        import json, sys
        sys.modules['torch'] = None  # as if PyTorch were not installed
        from ferro.cli import main
        rc = main(['bench', *{args!r}])
        print(json.dumps({{'rc': rc, 'matplotlib': 'matplotlib' in sys.modules}}))
    """)
    assert got == {"rc": 0, "matplotlib": False}
    report = json.loads(out.read_text())
    assert [set(e["results"]) for e in report["cases"]] == [{"numpy", "ferro:cpu"}, {"ferro:cpu"}]
    assert "ratios" in report["cases"][0] and report["cases"][0]["ratios"] == {}, "torch is the 64x64 reference"
    assert all("pass" not in e for e in report["cases"]), "no reference, no verdict"
    assert any(n.startswith("torch column left out") for n in report["meta"]["notes"])
    assert report["meta"]["torch"] == "not installed"
    imports = report["imports"]
    assert set(imports["median_s"]) == {"python", "numpy", "ferro"} and min(imports["median_s"].values()) > 0
    assert imports["ratio"] == pytest.approx(imports["median_s"]["ferro"] / imports["median_s"]["numpy"])
    assert imports["loaded_by_import_ferro"] == [], "import ferro loads no array library or plugin"

    from ferro.bench import plot  # the imports panel and an empty cell, drawn from the JSON alone
    report["cases"][0]["results"]["ferro:cpu"] = {"error": "UnsupportedOperationError: no kernel"}
    plot(report, str(tmp_path / "again.png"))
    assert (tmp_path / "again.png").read_bytes().startswith(PNG_SIGNATURE)


def test_an_unavailable_backend_named_explicitly_is_exit_2_with_its_reason(tmp_path: Path) -> None:
    if importlib.util.find_spec("ferro_testplugins") is None:
        pytest.skip("needs the test plugins: pip install -e tests/plugins")
    proc = bench("--quick", "--backend", "cpu,toyoff", "--json", str(tmp_path / "out.json"),
                 env={"FERRO_TESTPLUGINS_UNAVAILABLE": "1"})
    assert proc.returncode == 2
    assert "ferro bench: backend 'toyoff' is not available: " in proc.stderr
    assert "ferro_testplugins_no_such_array_library is not installed" in proc.stderr
    assert "Traceback" not in proc.stderr and "timing" not in proc.stderr, "refused before anything runs"
    assert proc.stdout == "" and not (tmp_path / "out.json").exists()


def test_an_unknown_backend_is_exit_2_naming_the_installed_ones() -> None:
    proc = bench("--quick", "--backend", "cpu, nosuch")
    assert proc.returncode == 2
    assert "ferro bench: no backend named 'nosuch'; installed backends: " in proc.stderr
    assert "cpu" in proc.stderr.split("installed backends: ")[1]
    assert "Traceback" not in proc.stderr


def test_plot_without_matplotlib_is_exit_2_before_timing(tmp_path: Path) -> None:
    png = tmp_path / "out.png"
    proc = subprocess.run([sys.executable, "-c", (
        "import sys; sys.modules['matplotlib'] = None\n"  # as if matplotlib were not installed
        "from ferro.cli import main\n"
        f"raise SystemExit(main(['bench', '--quick', *{SMALL!r}, '--plot', {str(png)!r}]))")],
        capture_output=True, text=True, env=clean_env(), timeout=120)
    assert proc.returncode == 2
    assert "ferro bench: --plot needs matplotlib, which is not installed (pip install 'ferro-core[bench]')" \
        in proc.stderr
    assert "Traceback" not in proc.stderr and "timing" not in proc.stderr
    assert not png.exists()


@pytest.mark.parametrize("args, words", [
    (["--rounds", "0"], "argument --rounds: must be positive, got 0"),
    (["--budget", "-1"], "argument --budget: must be positive, got -1"),
    (["--stat", "mean"], "argument --stat: invalid choice: 'mean'"),
])
def test_bad_option_values_are_usage_errors(args: list[str], words: str, capsys: pytest.CaptureFixture) -> None:
    from ferro.cli import main
    with pytest.raises(SystemExit) as exc:
        main(["bench", *args])
    assert exc.value.code == 2
    assert words in capsys.readouterr().err


def test_missing_output_folder_is_refused_before_timing(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from ferro.cli import main
    where = tmp_path / "no" / "such" / "out.json"
    assert main(["bench", "--quick", *SMALL, "--json", str(where)]) == 2
    err = capsys.readouterr().err
    assert f"ferro bench: --json {where}: its folder does not exist" in err and "timing" not in err


def test_import_ferro_bench_and_the_cli_load_no_array_library() -> None:
    got = run_json("""
        import json, sys
        import contextlib, io, ferro.bench, ferro.cli
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            ferro.cli.main(['bench', '--help'])  # builds every subcommand's parser
        before = sorted(m for m in ('numpy', 'torch', 'matplotlib') if m in sys.modules)
        ferro.bench.measure  # the harness's names load it on first use
        after = sorted(m for m in ('numpy', 'torch', 'matplotlib') if m in sys.modules)
        print(json.dumps([before, after]))
    """)
    assert got == [[], ["numpy"]]


def _load_run_py() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("run", ROOT / "benchmarks" / "run.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_benchmarks_run_py_still_exports_what_the_scripts_beside_it_import() -> None:
    import ferro.bench
    run = _load_run_py()
    wanted: set[str] = {"Case", "Contender", "Target", "CASES", "REFERENCES", "measure", "harness_overhead",
                        "ferro_contender", "numpy_contender", "torch_contender", "select_contenders",
                        "build_report", "render", "import_times", "import_check", "main"}
    for script in (ROOT / "benchmarks").glob("*.py"):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "run":
                wanted |= {a.name for a in node.names}
    missing = sorted(n for n in wanted if not hasattr(run, n))
    assert not missing, f"benchmarks/run.py no longer exports {missing}"
    assert run.REFERENCES is ferro.bench.REFERENCES and run.CASES is ferro.bench.CASES, "one table, not copies"


def test_benchmarks_run_py_runs_as_a_script() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", *SMALL],
                          capture_output=True, text=True, env=clean_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("ferro benchmarks: min of rounds; numpy ")
    assert lines[1].split()[:2] == ["case", "numpy"] and "ferro:cpu" in lines[1]
    assert [ln.split("  ")[0] for ln in lines[2:4]] == [CASE, GRAD_CASE]


def test_paired_ratio_is_the_median_of_same_round_ratios() -> None:
    from ferro.bench._cases import Target
    from ferro.bench._harness import Result, paired_ratio
    # The machine is twice as slow in rounds 2 and 3: each round's own ratio is still 1.25x.
    ours, ref = Result([5.0, 10.0, 10.0]), Result([4.0, 8.0, 8.0])
    assert paired_ratio(Target("ref", 1.2), ours, ref) == pytest.approx(1.25)
    assert paired_ratio(Target("ref", 0.9, throughput=True), ours, ref) == pytest.approx(0.8)
    assert paired_ratio(Target("ref", 1.2), Result([1.0, 3.0, 2.0]), Result([1.0, 1.0, 1.0])) == 2.0


@pytest.mark.skipif(not HAS_TORCH, reason="--models compares ferro with PyTorch")
def test_models_prints_both_tables_and_plots_the_ratios(tmp_path: Path) -> None:
    rows = ["--case", "digits MLP", "--case", "a + 1"]
    proc = bench("--models", "--quick", "--threads", "1", *rows, "--import-runs", "1", "--json",
                 str(tmp_path / "t.json"), "--plot", str(tmp_path / "t.png"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "t.json").read_text())
    models, ops = report["tables"]["models"]["1"], report["tables"]["ops"]["1"]
    assert list(models) == ["digits MLP step (batch 64)"]
    assert list(ops) == ["a + 1", "a + 1 [grad]"]
    assert ops["a + 1"]["vs_torch"] > 0 and ops["a + 1"]["vs_numpy"] > 0 and "vs_numpy" not in models[
        "digits MLP step (batch 64)"]
    assert report["first_op_vs_numpy"] > 0
    assert "## models" in proc.stdout and "## ops" in proc.stdout and "| a + 1 [grad] |" in proc.stdout
    assert (tmp_path / "t.png").read_bytes().startswith(PNG_SIGNATURE)


def test_models_refuses_bad_thread_counts() -> None:
    proc = bench("--models", "--threads", "0,x")
    assert proc.returncode == 2 and "argument --threads: expected positive integers" in proc.stderr
