"""Plugin discovery, overrides, disabling and isolation, through real installed entry points.

The plugins come from the ``ferro-testplugins`` distribution in tests/plugins; each
scenario runs in a fresh interpreter because discovery happens once per process.
"""

from __future__ import annotations

import pytest

import ferro

from conftest import run_json, run_python

BROKEN = {"testbroken_import": "ImportError", "testbadsig": "backnd", "testraises": "RuntimeError",
          "testoldapi": "999"}


def test_import_ferro_loads_no_plugin_and_no_array_library() -> None:
    got = run_json("""
        import json, sys, ferro
        print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in
              ('numpy', 'cupy', 'pyopencl', 'torch', 'pluggy', 'ferro_cpu', 'ferro_testplugins', 'ml_dtypes'))))
    """)
    assert got == []


def test_discovery_lists_backends_and_runs_the_toy_backend() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        t = ferro.ones(3, device='toy') + 1
        print(json.dumps({'installed': ferro.backends.installed(), 'available': ferro.backends.available(),
                          'values': t.numpy().tolist(), 'device': str(t.device),
                          'plugin': ferro.backends.get('toy').plugin}))
    """)
    assert {"cpu", "toy"} <= set(got["installed"])
    assert got["available"][0] == "cpu" and "toy" in got["available"]
    assert got["values"] == [2.0, 2.0, 2.0] and got["device"] == "toy:0"
    assert got["plugin"] == "testgood"


def test_broken_plugins_are_isolated_listed_and_warned_once() -> None:
    got = run_json("""
        import json, warnings, ferro
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            ferro.backends.installed(); ferro.backends.available(); ferro.ones(2) + 1
            ferro.backends.broken(); ferro.ones(2, device='toy')
        names = [str(x.message).split("'")[1] for x in w if x.category is ferro.backends.FerroPluginWarning]
        print(json.dumps({'broken': ferro.backends.broken(), 'warned': names,
                          'cpu': (ferro.ones(2) * 3).numpy().tolist()}))
    """)
    assert set(got["broken"]) == set(BROKEN)
    for name, words in BROKEN.items():
        assert words in got["broken"][name], (name, got["broken"][name])
    assert sorted(got["warned"]) == sorted(BROKEN), "each broken plugin is warned about exactly once"
    assert got["cpu"] == [3.0, 3.0]


def test_kernel_override_takes_precedence_over_the_backends_own() -> None:
    got = run_json("""
        import json, warnings, ferro, numpy as np
        warnings.simplefilter('ignore')
        import importlib
        x = ferro.tensor([0.0, 1.0])
        y = ferro.exp(x); z = x.exp()
        calls = importlib.import_module('ferro_testplugins.good').calls['exp']
        print(json.dumps({'calls': calls, 'y': y.numpy().tolist(), 'ref': np.exp([0.0, 1.0]).tolist()}))
    """, env={"FERRO_TESTPLUGINS_OVERRIDE": "1"})
    assert got["calls"] == 2
    assert got["y"] == pytest.approx(got["ref"])


def test_without_the_override_the_cpu_kernel_runs() -> None:
    got = run_json("""
        import json, warnings, ferro, importlib
        warnings.simplefilter('ignore')
        ferro.tensor([1.0]).exp()
        print(json.dumps(importlib.import_module('ferro_testplugins.good').calls['exp']))
    """)
    assert got == 0


def test_disable_plugins_skips_them() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        print(json.dumps({'installed': ferro.backends.installed(), 'disabled': ferro.backends.disabled(),
                          'broken': sorted(ferro.backends.broken())}))
    """, env={"FERRO_DISABLE_PLUGINS": "testgood, testraises"})
    assert "toy" not in got["installed"] and "cpu" in got["installed"]
    assert sorted(got["disabled"]) == ["testgood", "testraises"]
    assert "testraises" not in got["broken"]


@pytest.mark.parametrize("when", ["before_import", "after_import"])
def test_ferro_backend_env_is_read_at_first_use(when: str) -> None:
    code = """
        import json, os, warnings
        warnings.simplefilter('ignore')
        {pre}
        import ferro
        {post}
        print(json.dumps([ferro.backends.current_backend(), str(ferro.ones(1).device)]))
    """
    set_env = "os.environ['FERRO_BACKEND'] = 'toy'"
    code = code.format(pre=set_env if when == "before_import" else "",
                       post=set_env if when == "after_import" else "")
    assert run_json(code) == ["toy", "toy:0"]


def test_ferro_backend_env_naming_an_unavailable_backend_fails_clearly() -> None:
    proc = run_python("""
        import warnings, ferro
        warnings.simplefilter('ignore')
        ferro.ones(1)
    """, env={"FERRO_BACKEND": "cuda"}, expect_ok=False)
    if "BackendNotFoundError" in proc.stderr:
        pytest.skip("ferro-cuda is not installed")
    assert "BackendUnavailableError" in proc.stderr and "cuda" in proc.stderr


def test_set_backend_and_use_backend() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        out = [str(ferro.zeros(1).device)]
        with ferro.use_backend('toy'):
            out.append(str(ferro.zeros(1).device))
        out.append(str(ferro.zeros(1).device))
        ferro.set_backend('toy')
        out.append(str(ferro.zeros(1).device))
        ferro.set_backend('cpu')
        out.append(str(ferro.zeros(1).device))
        print(json.dumps(out))
    """)
    assert got == ["cpu", "toy:0", "cpu", "toy:0", "cpu"]


def test_unknown_backend_names_the_installed_ones() -> None:
    with pytest.raises(ferro.errors.BackendNotFoundError, match=r"installed backends: .*cpu"):
        ferro.set_backend("nonexistent")
    with pytest.raises(ferro.errors.BackendNotFoundError, match="nonexistent"):
        ferro.zeros(1, device="nonexistent")


IN_PROCESS_PLUGIN = """
    import json, warnings, ferro
    from ferro.backends import ArrayAPIBackend, hookimpl, PLUGIN_API_VERSION
    warnings.simplefilter('ignore')

    class NumpyAgain(ArrayAPIBackend):
        name = '{backend}'
        module_name = 'numpy'

    class Plugin:
        @hookimpl
        def ferro_plugin_api_version(self):
            return PLUGIN_API_VERSION
        @hookimpl
        def ferro_register_backends(self):
            return [NumpyAgain()]

    ferro.backends.installed()
    ok = ferro.backends.register_plugin(Plugin(), 'in-process')
"""


def test_register_plugin_in_process() -> None:
    got = run_json(IN_PROCESS_PLUGIN.format(backend="mine") + """
    t = ferro.arange(4, device='mine') * 2
    print(json.dumps([ok, 'mine' in ferro.backends.available(), t.numpy().tolist()]))
    """)
    assert got == [True, True, [0, 2, 4, 6]]


def test_a_second_backend_with_a_taken_name_is_refused() -> None:
    got = run_json(IN_PROCESS_PLUGIN.format(backend="cpu") + """
    print(json.dumps([ok, ferro.backends.broken().get('in-process', ''), ferro.backends.get('cpu').plugin]))
    """)
    assert got[0] is False and "already taken" in got[1] and got[2] == "cpu"
