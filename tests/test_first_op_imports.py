"""What a program's first op imports (``import ferro; ferro.ones(2) + 1``, the time-to-first-op row of
``benchmarks/ops.py``), and that what it leaves for later is still there when asked for."""

from __future__ import annotations

import pytest

from conftest import run_json

#: Loaded only when a program uses them: the layers (``ferro.nn.Linear``...) with ``nn.init`` and ``nn.utils``,
#: the optimizers whose update is no registered op (LBFGS, Muon, Adafactor, SparseAdam), the collectives (a
#: process-group plugin imports ferro.distributed's contract, ``_backend``), ferro-cuda's kernels
#: (its backend is registered at the first op, on every machine) and what reading their sources needs
#: (``importlib.resources`` brings ``tempfile``, ``shutil``, ``pathlib``...).
NOT_AT_FIRST_OP = ("ferro.nn.modules", "ferro.nn.modules.module", "ferro.nn.modules.transformer", "ferro.nn.init",
                   "ferro.nn.utils", "ferro.optim.lbfgs", "ferro.optim.muon", "ferro.optim.adafactor",
                   "ferro.optim.sparse_adam", "ferro.distributed._collectives", "ferro.distributed._world",
                   "ferro.distributed._mpi", "ferro_cuda._fused", "ferro_cuda.kernels", "importlib.resources",
                   "tempfile", "shutil")


def test_the_first_op_leaves_the_layers_and_kernel_sources_unloaded() -> None:
    got = run_json(f"""
        import json, sys, warnings
        warnings.simplefilter('ignore')  # the deliberately broken test plugins
        import ferro
        y = ferro.ones(2) + 1
        print(json.dumps({{'loaded': [m for m in {NOT_AT_FIRST_OP!r} if m in sys.modules],
                          'bound': 'ferro_cpu' in sys.modules, 'values': y.tolist()}}))
    """)
    assert got == {"loaded": [], "bound": True, "values": [2.0, 2.0]}


def test_the_layers_are_there_when_asked_for() -> None:
    got = run_json("""
        import json, sys
        import ferro
        import ferro.nn.functional as F
        import ferro.distributed as dist
        nn = ferro.nn
        before = 'ferro.nn.modules' in sys.modules
        linear = nn.Linear(2, 3)
        space = {}
        exec('from ferro.nn import *', space)
        from ferro.nn.modules import __all__ as layers
        from ferro.nn.modules.attention import multi_head_attention_forward
        from ferro.nn.modules.module import RemovableHandle
        try:
            nn.NoSuchLayer
            missing = None
        except AttributeError as e:
            missing = str(e)
        print(json.dumps({
            'before': before, 'after': 'ferro.nn.modules' in sys.modules,
            'linear': type(linear).__module__ + '.' + type(linear).__name__,
            'all': sorted(nn.__all__) == sorted({'functional', 'init', 'utils', 'Parameter', 'Buffer', *layers}),
            'star': sorted(n for n in space if n != '__builtins__') == sorted(nn.__all__),
            'dir': set(nn.__all__) <= set(dir(nn)),
            'mha': F.multi_head_attention_forward is multi_head_attention_forward,
            'mha_dir': 'multi_head_attention_forward' in dir(F),
            'handle': nn.RemovableHandle is RemovableHandle is ferro.optim.optimizer.RemovableHandle,
            'handle_module': RemovableHandle.__module__, 'missing': missing,
            'optim': [type(getattr(ferro.optim, n)).__name__ for n in ferro.optim.__all__],
            'optim_dir': set(ferro.optim.__all__) - {'lr_scheduler'} <= set(dir(ferro.optim)),
            'dist': [n for n in dist.__all__ if not hasattr(dist, n)],
            'dist_dir': set(dist.__all__) <= set(dir(dist))}))
    """)
    assert got == {"before": False, "after": True, "linear": "ferro.nn.modules.linear.Linear", "all": True,
                   "star": True, "dir": True, "mha": True, "mha_dir": True, "handle": True,
                   "handle_module": "ferro.nn.modules.module",
                   "missing": "module 'ferro.nn' has no attribute 'NoSuchLayer'",
                   "optim": ["type"] * 16 + ["module"], "optim_dir": True, "dist": [],
                   "dist_dir": True}


def test_the_first_op_holds_the_collector_off_and_frees_the_programs_garbage() -> None:
    # ferro._core.collector: no collection while the plugins load and the device binds, what they made frozen
    # afterwards, the collector on again; garbage the program made before is freed, not frozen (the only
    # collections: the full ones that do that); once only.
    got = run_json("""
        import gc, json, warnings, weakref
        warnings.simplefilter('ignore')  # the deliberately broken test plugins
        import ferro
        class Node:
            pass
        cycle = Node()
        cycle.me = cycle
        dead = weakref.ref(cycle)
        del cycle
        runs = []
        gc.callbacks.append(lambda phase, info: phase == 'start' and runs.append(info['generation']))
        frozen = gc.get_freeze_count()
        y = ferro.ones(2) + 1
        first = {'runs': sorted(set(runs)), 'grew': gc.get_freeze_count() > frozen, 'on': gc.isenabled(),
                 'freed': dead() is None, 'listed': any(o is y for o in gc.get_objects())}
        frozen = gc.get_freeze_count()
        z = ferro.ones(2, device='strict') + 1  # a second device bound: the collector left alone
        again = {'same': gc.get_freeze_count() <= frozen, 'on': gc.isenabled()}
        print(json.dumps({'first': first, 'again': again, 'values': (y + z.cpu()).tolist()}))
    """)
    # 'listed': no tensor is frozen (none exists before the first device binds): ferro._compile finds the live
    # tensors through gc.get_objects(), which leaves frozen objects out
    assert got == {"first": {"runs": [2], "grew": True, "on": True, "freed": True, "listed": True},
                   "again": {"same": True, "on": True}, "values": [4.0, 4.0]}


def test_a_program_that_turned_the_collector_off_keeps_it_off() -> None:
    got = run_json("""
        import gc, json, warnings
        warnings.simplefilter('ignore')
        import ferro
        gc.disable()
        frozen = gc.get_freeze_count()
        y = ferro.ones(2) + 1
        print(json.dumps({'on': gc.isenabled(), 'same': gc.get_freeze_count() <= frozen, 'values': y.tolist()}))
    """)
    assert got == {"on": False, "same": True, "values": [2.0, 2.0]}


#: After plugin discovery (ferro-cpu's backend imports NumPy there), before any device binds: whether NumPy was
#: imported before, OpenBLAS's pools' sizes, and the variable as the program sees it.
_BLAS_AT_DISCOVERY = """
    import json, os, sys, warnings
    warnings.simplefilter('ignore')
    {setup}
    import ferro
    before = 'numpy' in sys.modules
    ferro.backends.available()
    import threadpoolctl
    pools = [p['num_threads'] for p in threadpoolctl.threadpool_info() if p['internal_api'] == 'openblas']
    print(json.dumps({{'before': before, 'pools': pools, 'env': os.environ.get('OPENBLAS_NUM_THREADS')}}))
"""


def test_ferro_cpu_starts_openblas_on_one_thread_where_it_imports_numpy() -> None:
    # ferro_cpu._blas_start: the pool ferro-cpu keeps at one thread starts so (no thread per core started, then
    # parked); the variable is set for NumPy's import only.
    pytest.importorskip("threadpoolctl")
    got = run_json(_BLAS_AT_DISCOVERY.format(setup="os.environ.pop('OPENBLAS_NUM_THREADS', None)"))
    if not got["pools"]:
        pytest.skip("NumPy's BLAS is not OpenBLAS here")
    assert got == {"before": False, "pools": [1], "env": None}


def test_a_program_that_chose_the_blas_threads_keeps_its_choice_until_the_device_binds() -> None:
    pytest.importorskip("threadpoolctl")
    got = run_json(_BLAS_AT_DISCOVERY.format(setup="os.environ['OPENBLAS_NUM_THREADS'] = '2'"))
    if not got["pools"]:
        pytest.skip("NumPy's BLAS is not OpenBLAS here")
    assert got == {"before": False, "pools": [2], "env": "2"}
