"""Plugin discovery, overrides, disabling, isolation and selection, through real installed entry points.

The plugins come from the ``ferro-testplugins`` distribution in tests/plugins
(installed with ``pip install -e tests/plugins``; never imported here). Each
scenario runs in a fresh interpreter because discovery happens once per
process; the scenario prints one JSON document that the test checks.
"""

from __future__ import annotations

import pytest

import ferro

from conftest import run_json, run_python

#: The broken test plugins, and words their error must contain.
BROKEN = {
    "testbroken_import": "importing ferro_testplugins.broken_import failed: ImportError: "
                         "ferro_testplugins.broken_import needs a library that is not installed (on purpose)",
    "testbadsig": "PluginValidationError: Plugin 'testbadsig' for hook 'ferro_register_kernels'",
    "testraises": "ferro_register_backends() raised RuntimeError: "
                  "this plugin fails while registering its backends (on purpose)",
    "testoldapi": "it speaks plugin API version 999, this ferro speaks 1",
    "testsysexit": "importing ferro_testplugins.sys_exit failed: SystemExit: "
                   "ferro_testplugins.sys_exit exits at import (on purpose)",
}
UNAVAILABLE = {"FERRO_TESTPLUGINS_UNAVAILABLE": "1"}
MISSING = "ferro_testplugins_no_such_array_library is not installed"

# -- discovery -----------------------------------------------------------------------------------


def test_import_ferro_loads_no_plugin_and_no_array_library() -> None:
    got = run_json("""
        import json, sys, warnings
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            import ferro, ferro.testing, ferro.backends
        heavy = sorted(m for m in sys.modules if m.split('.')[0] in
                       ('numpy', 'cupy', 'pyopencl', 'torch', 'ml_dtypes', 'ferro_cpu', 'ferro_cuda', 'ferro_opencl',
                        'ferro_testplugins'))
        print(json.dumps({'heavy': heavy, 'warnings': [str(x.message) for x in w]}))
    """)
    assert got == {"heavy": [], "warnings": []}, "entry points are loaded on first need, not at import"


def test_discovery_lists_the_toy_backend_and_runs_it() -> None:
    got = run_json("""
        import json, sys, warnings, ferro
        warnings.simplefilter('ignore')
        before = 'ferro_testplugins.good' in sys.modules
        installed = ferro.backends.installed()
        after = 'ferro_testplugins.good' in sys.modules
        t = ferro.ones(3, device='toy') + 1
        b = ferro.backends.get('toy')
        print(json.dumps({'installed': installed, 'available': ferro.backends.available(), 'loaded': [before, after],
                          'values': t.numpy().tolist(), 'dtype': str(t.numpy().dtype), 'device': str(t.device),
                          'plugin': b.plugin, 'class': type(b).__name__}))
    """)
    assert {"cpu", "toy"} <= set(got["installed"])
    assert got["available"][0] == "cpu" and "toy" in got["available"]
    assert got["loaded"] == [False, True], "the plugin module is imported by the first query"
    assert got["values"] == [2.0, 2.0, 2.0] and got["dtype"] == "float32"
    assert got["device"] == "toy:0"
    assert got["plugin"] == "testgood" and got["class"] == "ToyBackend"


def test_an_unavailable_backend_is_installed_with_its_reason() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        errors = []
        for make in (lambda: ferro.ones(1, device='toyoff'), lambda: ferro.set_backend('toyoff')):
            try:
                make()
            except ferro.errors.BackendUnavailableError as e:
                errors.append(str(e))
        print(json.dumps({'installed': ferro.backends.installed(), 'available': ferro.backends.available(),
                          'unavailable': ferro.backends.unavailable(), 'errors': errors,
                          'cpu': (ferro.ones(2) * 2).numpy().tolist()}))
    """, UNAVAILABLE)
    assert "toyoff" in got["installed"] and "toyoff" not in got["available"]
    assert MISSING in got["unavailable"]["toyoff"]
    assert len(got["errors"]) == 2
    for err in got["errors"]:
        assert err.startswith("backend 'toyoff' is not available: ") and MISSING in err
    assert got["cpu"] == [2.0, 2.0]


# -- broken plugins --------------------------------------------------------------------------------


def test_broken_plugins_are_isolated_listed_and_warned_about_once_each() -> None:
    got = run_json("""
        import json, warnings, ferro
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            ferro.backends.installed(); ferro.backends.available(); ferro.backends.status()
            a = ferro.ones(2) + 1
            ferro.backends.broken(); ferro.backends.broken()
            t = ferro.ones(2, device='toy') * 3
            ferro.backends.installed()
        print(json.dumps({
            'broken': ferro.backends.broken(),
            'warnings': [[x.category.__name__, str(x.message)] for x in w],
            'installed': ferro.backends.installed(),
            'cpu': a.numpy().tolist(), 'toy': t.numpy().tolist()}))
    """)
    assert set(got["broken"]) == set(BROKEN)
    for name, words in BROKEN.items():
        assert words in got["broken"][name], (name, got["broken"][name])
    assert "backnd" in got["broken"]["testbadsig"], "the misspelled parameter is named"
    warned = [msg for cat, msg in got["warnings"] if cat == "FerroPluginWarning"]
    assert len(warned) == len(BROKEN) == len(got["warnings"]), got["warnings"]
    for name in BROKEN:
        mine = [m for m in warned if m.startswith(f"ferro plugin '{name}' is broken and was skipped: ")]
        assert len(mine) == 1, f"{name} is warned about exactly once: {warned}"
        assert got["broken"][name] in mine[0], "the warning carries the error"
    assert {"cpu", "toy"} <= set(got["installed"])
    assert got["cpu"] == [2.0, 2.0] and got["toy"] == [3.0, 3.0]


def test_the_warning_category_is_public_and_a_user_warning() -> None:
    assert issubclass(ferro.backends.FerroPluginWarning, UserWarning)
    proc = run_python("""
        import warnings, ferro
        warnings.simplefilter('error', ferro.backends.FerroPluginWarning)
        ferro.backends.installed()
    """, expect_ok=False)
    assert proc.returncode != 0 and "FerroPluginWarning: ferro plugin 'test" in proc.stderr, \
        "the category can be filtered (here: turned into an error)"


def test_without_the_switch_the_broken_test_plugins_are_inert() -> None:
    """Installed in a developer's environment, ferro-testplugins must not make every command warn."""
    got = run_json("""
        import json, warnings, ferro
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            installed = ferro.backends.installed()
            values = (ferro.ones(2) + 1).numpy().tolist()
        print(json.dumps({'broken': ferro.backends.broken(), 'warnings': [str(x.message) for x in w],
                          'installed': installed, 'values': values}))
    """, env={"FERRO_TESTPLUGINS": ""})
    assert not [n for n in got["broken"] if n.startswith("test")], got["broken"]
    assert got["warnings"] == []
    assert {"cpu", "toy"} <= set(got["installed"]) and got["values"] == [2.0, 2.0]


# -- what a plugin hands over is checked when it is handed over ---------------------------------------

#: FERRO_TESTPLUGINS_BADKERNELS -> the error of plugin testbadkernels (its hook answers for cpu).
BAD_KERNEL_TABLES = {
    "list": "ferro_register_kernels(backend='cpu') returned list [('add', <function _exp",
    "notcallable": "ferro_register_kernels(backend='cpu') returned int 42 for kernel 'add', not a callable",
    "unknown": "ferro_register_kernels(backend='cpu') returned unknown kernel name(s) 'no_such_kernel'",
    "badkey": "ferro_register_kernels(backend='cpu') returned unknown kernel name(s) 1",
    "generatorexit": "ferro_register_kernels(backend='cpu') raised GeneratorExit: "
                     "ferro_register_kernels stops like a closed generator (on purpose)",
}

ISOLATION = """
    import json, warnings, ferro
    def attempt(f):
        try:
            return f()
        except Exception as e:
            return f'{type(e).__name__}: {e}'
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        out = {
            'installed': attempt(ferro.backends.installed), 'available': attempt(ferro.backends.available),
            'status': attempt(lambda: {n: [bool(a), a.reason] for n, a in ferro.backends.status().items()}),
            'cpu': attempt(lambda: (ferro.ones(2) + 1).numpy().tolist()),
            'cpu_exp': attempt(lambda: ferro.exp(ferro.zeros(2)).numpy().tolist()),
            'toy': attempt(lambda: (ferro.ones(2, device='toy') * 3).numpy().tolist()),
            'bad': attempt(lambda: (ferro.ones(2, device='bad') + 1).numpy().tolist()),
            'info': attempt(lambda: sorted(__import__('ferro.cli').cli.info_report()['backends'])),
            'ops': attempt(lambda: sorted(__import__('ferro.cli').cli.ops_matrix()['add'])),
        }
    out.update(broken=ferro.backends.broken(), installed_after=ferro.backends.installed(),
               available_after=ferro.backends.available(),
               warnings=[str(x.message) for x in w if x.category is ferro.backends.FerroPluginWarning])
    print(json.dumps(out))
"""


def _isolated(plugin: str, error: str, got: dict) -> None:
    """``plugin`` is listed with ``error`` and warned about once; cpu and toy keep working."""
    assert error in got["broken"].get(plugin, ""), got["broken"]
    mine = [m for m in got["warnings"] if m.startswith(f"ferro plugin '{plugin}' is broken and was skipped: ")]
    assert len(mine) == 1 and got["broken"][plugin] in mine[0], got["warnings"]
    assert got["cpu"] == [2.0, 2.0] and got["cpu_exp"] == [1.0, 1.0] and got["toy"] == [3.0, 3.0]
    assert {"cpu", "toy"} <= set(got["ops"]) and "bad" not in got["ops"], got["ops"]
    assert {"cpu", "toy"} <= set(got["installed_after"]) and "cpu" in got["available_after"]


@pytest.mark.parametrize("what", sorted(BAD_KERNEL_TABLES))
def test_a_malformed_kernel_table_is_the_plugins_error(what: str) -> None:
    """Whatever ferro_register_kernels hands over, cpu's kernels stay its own and the plugin is listed."""
    got = run_json(ISOLATION, env={"FERRO_TESTPLUGINS_BADKERNELS": what})
    _isolated("testbadkernels", BAD_KERNEL_TABLES[what], got)
    assert got["bad"].startswith("BackendNotFoundError: no backend named 'bad'")


def test_every_kernel_name_ferro_calls_may_be_contributed() -> None:
    """The names a kernel hook may hand over cover every kernel core looks up (else a valid override is refused)."""
    from ferro._ops.fused import FUSED_OPS
    from ferro.backends._registry import _known_kernels
    ferro.backends.installed()  # the plugins' ops (ferro_register_ops) name kernels too
    known = _known_kernels({})
    fused = {k for forward, backward, _ in FUSED_OPS.values() for k in (forward, backward)}
    assert fused <= known, sorted(fused - known)
    for name in ("cpu", "opencl"):
        b = ferro.backends.get(name)
        if b.availability():  # every kernel of the real backends is a name ferro knows without their table
            assert set(b._device(None)._kernels) <= known, sorted(set(b._device(None)._kernels) - known)


#: FERRO_TESTPLUGINS_BADBACKEND -> the error of plugin testbadbackend (whose backend is 'bad').
BAD_BACKENDS = {
    "availability": "backend 'bad': availability() raised RuntimeError: availability() fails (on purpose)",
    "availability-systemexit": "backend 'bad': availability() raised SystemExit: 3",
    "availability-type": "backend 'bad': availability() returned bool True, not a ferro.backends.Availability",
    "kernels": "backend 'bad': kernels(0) raised RuntimeError: kernels() fails (on purpose)",
    "kernels-notcallable": "backend 'bad': kernels(0) returned int 42 for kernel 'add', not a callable",
    "device_count": "backend 'bad': device_count() returned str 'two', not an int >= 0",
    "device_count-raises": "backend 'bad': device_count() raised RuntimeError: device_count() fails (on purpose)",
}


@pytest.mark.parametrize("what", sorted(BAD_BACKENDS))
def test_a_backend_failing_in_its_methods_is_its_plugins_error(what: str) -> None:
    got = run_json(ISOLATION, env={"FERRO_TESTPLUGINS_BADBACKEND": what})
    error = BAD_BACKENDS[what]
    _isolated("testbadbackend", error, got)
    for query in ("installed", "available", "status", "info", "ops"):
        assert not isinstance(got[query], str), f"{query}() failed: {got[query]}"
    assert {"cpu", "toy"} <= set(got["status"]) and got["status"]["cpu"] == [True, ""]
    assert "bad" not in got["installed_after"] and "bad" not in got["available_after"]
    if what.startswith("availability"):
        # Asked first, availability() failed: from then on the backend is gone and its plugin listed.
        assert "bad" not in got["available"] and "bad" not in got["status"]
        assert got["bad"].startswith("BackendNotFoundError: no backend named 'bad'") and error in got["bad"]
    else:
        # kernels() and device_count() are asked when the device is first used: that use names the plugin.
        assert got["bad"] == f"BackendUnavailableError: backend 'bad' is not available: " \
                             f"its plugin 'testbadbackend' is broken: {error}"


@pytest.mark.parametrize("what", ["kernels", "availability", "device_count-raises"])
def test_ferro_ops_and_info_skip_a_backend_that_breaks_while_they_run(what: str) -> None:
    got = run_json("""
        import json, warnings, ferro
        from ferro.cli import info_report, ops_matrix
        warnings.simplefilter('ignore')
        matrix = ops_matrix()
        print(json.dumps({'ops': sorted(matrix['add']), 'cpu_add': matrix['add']['cpu'],
                          'info': sorted(info_report()['backends']), 'broken': ferro.backends.broken()}))
    """, env={"FERRO_TESTPLUGINS_BADBACKEND": what})
    assert "bad" not in got["ops"] and {"cpu", "toy"} <= set(got["ops"]) and "float32" in got["cpu_add"]
    assert "bad" not in got["info"] and "testbadbackend" in got["broken"]


# -- kernel overrides ------------------------------------------------------------------------------


def test_a_plugin_kernel_overrides_the_backends_own() -> None:
    got = run_json("""
        import importlib, json, warnings, ferro, numpy as np
        warnings.simplefilter('ignore')
        x = ferro.tensor([0.0, 1.0, 2.0])
        y = ferro.exp(x)
        z = x.exp()
        calls = importlib.import_module('ferro_testplugins.good').calls
        after_cpu = calls['exp']
        ferro.exp(ferro.tensor([0.0, 1.0], device='toy'))  # the override is for cpu only
        print(json.dumps({'cpu_calls': after_cpu, 'total_calls': calls['exp'], 'y': y.numpy().tolist(),
                          'z': z.numpy().tolist(), 'ref': np.exp(np.float32([0, 1, 2])).tolist(),
                          'dtype': str(y.dtype), 'supports': ferro.backends.get('cpu').supports('exp', ferro.float32)}))
    """, env={"FERRO_TESTPLUGINS_OVERRIDE": "1"})
    assert got["cpu_calls"] == 2, "ferro.exp and Tensor.exp on cpu both ran the plugin's kernel"
    assert got["total_calls"] == 2, "toy's own exp ran on toy"
    assert got["y"] == pytest.approx(got["ref"]) and got["z"] == pytest.approx(got["ref"])
    assert got["dtype"] == "ferro.float32" and got["supports"] is True


def test_without_the_switch_the_backends_own_kernel_runs() -> None:
    got = run_json("""
        import importlib, json, warnings, ferro
        warnings.simplefilter('ignore')
        y = ferro.tensor([1.0]).exp()
        print(json.dumps([importlib.import_module('ferro_testplugins.good').calls['exp'], y.numpy().tolist()]))
    """)
    assert got[0] == 0
    assert got[1] == pytest.approx([2.718281828])


OVERRIDE_IN_PROCESS = """
    import importlib, json, os, warnings, ferro, numpy as np
    from ferro.backends import PLUGIN_API_VERSION, hookimpl
    warnings.simplefilter('ignore')
    mine = {{'exp': 0}}

    class Override:
        @hookimpl
        def ferro_plugin_api_version(self):
            return PLUGIN_API_VERSION

        @hookimpl({opts})
        def ferro_register_kernels(self, backend):
            if backend.name != 'cpu':
                return None
            def exp(x):
                mine['exp'] += 1
                return np.asarray(np.exp(x))
            return {{'exp': exp}}

    ferro.backends.installed()  # the entry points first, then this plugin: it is the last registered
    ok = ferro.backends.register_plugin(Override(), 'in-process-override')
    ferro.exp(ferro.ones(2))
    print(json.dumps([ok, mine['exp'], importlib.import_module('ferro_testplugins.good').calls['exp']]))
"""


@pytest.mark.parametrize("opts, winner", [("", "in-process"), ("trylast=True", "testgood")])
def test_among_plugins_the_first_in_pluggys_call_order_wins(opts: str, winner: str) -> None:
    ok, mine, theirs = run_json(OVERRIDE_IN_PROCESS.format(opts=opts), env={"FERRO_TESTPLUGINS_OVERRIDE": "1"})
    assert ok is True
    assert (mine, theirs) == ((1, 0) if winner == "in-process" else (0, 1))


# -- disabling -------------------------------------------------------------------------------------


def test_disabled_plugins_are_skipped_without_loading_them() -> None:
    got = run_json("""
        import json, sys, warnings, ferro
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            installed = ferro.backends.installed()
        try:
            ferro.ones(1, device='toy')
            error = ''
        except ferro.errors.BackendNotFoundError as e:
            error = str(e)
        print(json.dumps({'installed': installed, 'disabled': sorted(ferro.backends.disabled()),
                          'broken': sorted(ferro.backends.broken()), 'error': error,
                          'imported': 'ferro_testplugins.good' in sys.modules,
                          'warned': sorted(str(x.message).split("'")[1] for x in w),
                          'cpu': (ferro.ones(2) + 1).numpy().tolist()}))
    """, env={"FERRO_DISABLE_PLUGINS": "testgood, testraises"})
    assert "toy" not in got["installed"] and "cpu" in got["installed"]
    assert got["disabled"] == ["testgood", "testraises"]
    assert got["imported"] is False, "a disabled plugin's module is never imported"
    assert "testraises" not in got["broken"] and "testraises" not in got["warned"]
    assert sorted(got["broken"]) == sorted(set(BROKEN) - {"testraises"})
    assert got["error"].startswith("no backend named 'toy'; installed backends: cpu")
    assert got["cpu"] == [2.0, 2.0]


def test_disabling_only_the_good_plugin() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        print(json.dumps([ferro.backends.installed(), ferro.backends.disabled()]))
    """, env={"FERRO_DISABLE_PLUGINS": "testgood"})
    assert "toy" not in got[0] and got[1] == ["testgood"]


# -- selection ---------------------------------------------------------------------------------------

SELECTION = """
    import json, os, warnings
    warnings.simplefilter('ignore')
    {before}
    import ferro
    {after}
    backends = ferro.backends
    print(json.dumps([backends.current_backend(), str(ferro.ones(1).device), str(backends.current_device())]))
"""


@pytest.mark.parametrize("when", ["before import", "after import"])
def test_FERRO_BACKEND_is_read_at_first_use(when: str) -> None:
    set_env = "os.environ['FERRO_BACKEND'] = 'toy'"
    code = SELECTION.format(before=set_env if when == "before import" else "",
                            after=set_env if when == "after import" else "")
    assert run_json(code) == ["toy", "toy:0", "toy:0"]


def test_FERRO_BACKEND_is_read_once() -> None:
    got = run_json("""
        import json, os, warnings, ferro
        warnings.simplefilter('ignore')
        first = str(ferro.ones(1).device)
        os.environ['FERRO_BACKEND'] = 'toy'
        print(json.dumps([first, str(ferro.ones(1).device)]))
    """)
    assert got == ["cpu", "cpu"], "the first use fixed the default; a later change of the variable is not seen"


@pytest.mark.parametrize("value, error, words", [
    ("toyoff", "BackendUnavailableError", f"backend 'toyoff' is not available: {MISSING}"),
    ("nope", "BackendNotFoundError", "no backend named 'nope'; installed backends: cpu"),
])
def test_FERRO_BACKEND_naming_a_backend_that_cannot_run_fails_clearly(value: str, error: str, words: str) -> None:
    proc = run_python("""
        import warnings, ferro
        warnings.simplefilter('ignore')
        ferro.ones(1)
    """, env={"FERRO_BACKEND": value, **UNAVAILABLE}, expect_ok=False)
    assert proc.returncode != 0
    assert f"ferro.errors.{error}: {words}" in proc.stderr, proc.stderr[-2000:]


def test_set_backend_and_use_backend() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        out = [str(ferro.zeros(1).device)]
        with ferro.use_backend('toy'):
            out.append(str(ferro.zeros(1).device))
            with ferro.use_backend('cpu'):
                out.append(str(ferro.zeros(1).device))
            out.append(ferro.backends.current_backend())
        out.append(str(ferro.zeros(1).device))
        try:
            with ferro.use_backend('toy:0'):
                raise KeyError('inside')
        except KeyError:
            pass
        out.append(str(ferro.zeros(1).device))
        ferro.set_backend('toy')
        out.append(str(ferro.zeros(1).device))
        with ferro.use_backend('cpu'):
            out.append(str(ferro.zeros(1).device))
        out.append(str(ferro.zeros(1).device))
        ferro.set_backend('cpu')
        out.append(str(ferro.zeros(1).device))
        print(json.dumps(out))
    """)
    assert got == ["cpu", "toy:0", "cpu", "toy", "cpu", "cpu", "toy:0", "cpu", "toy:0", "cpu"]


def test_set_backend_to_an_unknown_name_changes_nothing() -> None:
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        ferro.set_backend('toy')
        errors = []
        for bad in (lambda: ferro.set_backend('nope'), lambda: ferro.use_backend('nope').__enter__()):
            try:
                bad()
            except ferro.errors.BackendNotFoundError as e:
                errors.append(str(e))
        print(json.dumps([errors, str(ferro.ones(1).device)]))
    """)
    errors, dev = got
    assert len(errors) == 2 and all(e.startswith("no backend named 'nope'; installed backends: cpu") for e in errors)
    assert dev == "toy:0"


def test_an_unknown_backend_names_the_installed_ones() -> None:
    installed = ", ".join(ferro.backends.installed())
    assert "toy" in installed
    for make in (lambda: ferro.set_backend("nonexistent"), lambda: ferro.zeros(1, device="nonexistent")):
        with pytest.raises(ferro.errors.BackendNotFoundError) as info:
            make()
        assert str(info.value).startswith(f"no backend named 'nonexistent'; installed backends: {installed}")
        assert "broken plugins: " in str(info.value) and "testbroken_import" in str(info.value)
        assert isinstance(info.value, ValueError)


# -- in-process plugins ------------------------------------------------------------------------------

IN_PROCESS_PLUGIN = """
    import json, warnings, ferro
    from ferro.backends import ArrayAPIBackend, hookimpl, PLUGIN_API_VERSION

    class NumpyAgain(ArrayAPIBackend):
        name = '{backend}'
        module_name = 'numpy'

    class Plugin:
        @hookimpl
        def ferro_plugin_api_version(self):
            return {version}

        @hookimpl
        def ferro_register_backends(self):
            return [NumpyAgain()]

    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        ferro.backends.installed()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        ok = ferro.backends.register_plugin(Plugin(), {name!r})
    warned = [str(x.message) for x in w]
"""


def _in_process(backend: str, tail: str, version: str = "PLUGIN_API_VERSION", name: str = "in-process") -> object:
    return run_json(IN_PROCESS_PLUGIN.format(backend=backend, version=version, name=name) + tail)


def test_register_plugin_in_process() -> None:
    got = _in_process("mine", """
    t = ferro.arange(4, device='mine') * 2
    b = ferro.backends.get('mine')
    print(json.dumps([ok, warned, 'mine' in ferro.backends.available(), t.numpy().tolist(), str(t.device), b.plugin]))
    """)
    assert got == [True, [], True, [0, 2, 4, 6], "mine:0", "in-process"]


def test_register_plugin_in_process_with_a_wrong_api_version_is_refused() -> None:
    got = _in_process("mine", """
    print(json.dumps([ok, warned, ferro.backends.broken().get('in-process'), 'mine' in ferro.backends.installed()]))
    """, version="PLUGIN_API_VERSION + 1")
    ok, warned, error, installed = got
    assert ok is False and installed is False
    assert error == "it speaks plugin API version 2, this ferro speaks 1"
    assert warned == [f"ferro plugin 'in-process' is broken and was skipped: {error}"]


def test_a_second_backend_with_a_taken_name_is_refused() -> None:
    got = _in_process("cpu", """
    print(json.dumps([ok, warned, ferro.backends.broken().get('in-process', ''), ferro.backends.get('cpu').plugin,
                      (ferro.ones(2) + 1).numpy().tolist()]))
    """)
    ok, warned, error, plugin, values = got
    assert ok is False
    assert error == "backend name 'cpu' is already taken by plugin 'cpu'"
    assert len(warned) == 1 and error in warned[0]
    assert plugin == "cpu" and values == [2.0, 2.0]


def test_a_second_plugin_with_a_taken_name_leaves_the_first_alone() -> None:
    """Registering under a name already in use refuses the newcomer; the installed plugin keeps working."""
    got = _in_process("mine", """
    try:
        values = (ferro.ones(2, device='toy') + 1).numpy().tolist()
    except Exception as e:
        values = repr(e)
    print(json.dumps([ok, ferro.backends.installed(), 'testgood' in ferro.backends.broken(), values,
                      'mine' in ferro.backends.installed()]))
    """, name="testgood")
    ok, installed, testgood_broken, values, mine = got
    assert ok is False and mine is False, "the newcomer is refused"
    assert "toy" in installed, "the plugin already registered under that name keeps its backends"
    assert testgood_broken is False, "the good plugin is not reported broken for someone else's mistake"
    assert values == [2.0, 2.0]


def test_manager_reads_module_hooks_as_pluggy_does() -> None:
    """ferro's plugin manager answers ``parse_hookimpl_opts`` for a module plugin from its ``__dict__``: the
    same answer as pluggy's own for every name of every installed plugin (and for a module holding a
    ``staticmethod``, a class and a bound method, which go to pluggy)."""
    import types

    import pluggy

    from ferro.backends import _hookspec, _registry
    _registry.load()
    pm = _registry._manager()
    assert isinstance(pm, _hookspec.Manager)
    plain = pluggy.PluginManager(_hookspec.PROJECT)
    odd = types.ModuleType("odd")

    class Holder:
        @_hookspec.hookimpl
        def ferro_report_info(self) -> None:
            return None
    odd.static = staticmethod(_hookspec.hookimpl(lambda: 1))
    odd.bound = Holder().ferro_report_info
    odd.Holder = Holder
    plugins = [p for p in pm.get_plugins() if isinstance(p, types.ModuleType)] + [odd]
    seen = 0
    for plugin in plugins:
        for name in dir(plugin):
            got, want = pm.parse_hookimpl_opts(plugin, name), plain.parse_hookimpl_opts(plugin, name)
            assert got == want, (plugin, name)
            seen += got is not None
    assert seen >= 2 * len(plugins) - 2  # every plugin has its version hook and one more, at least


def test_known_kernel_names_answer_as_the_gathered_set() -> None:
    """The names a kernel hook may hand over, asked one by one (``_Known``), are those of ``_known_kernels``."""
    from ferro.backends._registry import REGISTRY, _Known, _known_kernels
    ferro.backends.installed()
    own = {"my_own_kernel": abs}
    known, every = _Known(own), _known_kernels(own)
    names = set(every) | {"nope", "add_forward_backward", "add_backward_forward", "my_own_kernel_forward", "", 3}
    names |= {f"{n}x" for n in REGISTRY}
    for name in names:
        assert (name in known) == (name in every), name


def test_declared_backends_load_when_asked_for() -> None:
    """ferro-cuda and ferro-opencl declare their backends' names: the cpu device's first op does not import
    their backend modules; asking for one imports it, listing the backends imports both, in plugin order."""
    got = run_json("""
        import json, sys
        import ferro
        from ferro.backends import _registry
        ferro.ones(2) + 1
        first = sorted(m for m in ("ferro_cuda._backend", "ferro_opencl._backend") if m in sys.modules)
        deferred = sorted(_registry._state.deferred)
        b = ferro.backends.get("opencl")
        after_get = sorted(m for m in ("ferro_cuda._backend", "ferro_opencl._backend") if m in sys.modules)
        order = list(_registry.backends())
        plugins = [n for n in _registry._state.plugins if any(x.plugin == n for x in _registry.backends().values())]
        print(json.dumps({"first": first, "deferred": deferred, "after_get": after_get, "order": order,
                          "by_plugin": [_registry.backends()[n].plugin for n in order], "plugins": plugins,
                          "type": type(b).__name__, "left": sorted(_registry._state.deferred)}))
    """)
    assert got["first"] == [] and got["deferred"] == ["cuda", "opencl"]
    assert got["after_get"] == ["ferro_opencl._backend"] and got["type"] == "OpenCLBackend"
    assert got["left"] == [] and {"cpu", "cuda", "opencl"} <= set(got["order"])
    # every backend listed where its plugin was registered, as if none had waited
    assert sorted(got["by_plugin"], key=got["plugins"].index) == got["by_plugin"]


DECLARING = """
    import json, types, warnings
    import ferro
    from ferro.backends import ArrayAPIBackend, _registry, hookimpl, register_plugin
    made = []

    def plugin(name, backend, declared):
        class Mine(ArrayAPIBackend):
            module_name = "numpy"
        Mine.name = backend
        m = types.ModuleType(name)

        @hookimpl
        def ferro_plugin_api_version():
            return 1

        @hookimpl
        def ferro_register_backends():
            made.append(name)
            return [Mine()]
        if declared:
            ferro_register_backends.ferro_backend_names = (declared,)
        m.ferro_plugin_api_version, m.ferro_register_backends = ferro_plugin_api_version, ferro_register_backends
        return m
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = {}
        register_plugin(plugin("early", "same", "same"), "early")
        out["made_after_early"] = list(made)
        register_plugin(plugin("late", "same", None), "late")  # eager, same name: the earlier plugin wins
        out["made"] = list(made)
        out["same"] = ferro.backends.get("same").plugin
        register_plugin(plugin("liar", "other", "declared"), "liar")  # declares one name, returns another
        out["other"] = ferro.backends.get("other").plugin
        try:
            ferro.backends.get("nothing")
        except Exception as e:
            out["missing"] = type(e).__name__
        out["broken"] = sorted(_registry.broken())
        out["warned"] = [str(x.message) for x in w]
    print(json.dumps(out))
"""


def test_a_declared_name_is_taken_in_plugin_order() -> None:
    """A plugin registered first keeps a backend name it declared (deferred) when a later plugin hands over the
    same name, as when nothing waits; a backend found under an undeclared name is still found."""
    got = run_json(DECLARING)
    assert got["made_after_early"] == [] and sorted(got["made"]) == ["early", "late"]
    assert got["same"] == "early" and "late" in got["broken"] and not {"early", "liar"} & set(got["broken"])
    assert any("'same' is already taken by plugin 'early'" in m for m in got["warned"])
    assert got["other"] == "liar" and got["missing"] == "BackendNotFoundError"
