"""``ferro run -n N script.py``: start a job through the installed ``mpiexec`` (a thin wrapper).

The ``mpiexec`` next to this Python (the one ``pip install mpich`` puts in the
virtual environment) is preferred over one on ``PATH``. A hosts file is passed
through with the flag the implementation expects (``-f`` for MPICH's Hydra,
``--hostfile`` for Open MPI).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["find_mpiexec", "mpiexec_command", "launched_by_mpi", "launch"]

_LAUNCHER_VARS = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi() -> bool:
    """Whether this process was started by an MPI launcher."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def find_mpiexec() -> str:
    """The ``mpiexec`` to use; FileNotFoundError with the install command when there is none."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(beside, os.X_OK):
        return beside
    import shutil  # deferred: `import ferro.distributed` (a process-group plugin at the first op) needs none

    found = shutil.which("mpiexec")
    if found is None:
        raise FileNotFoundError('no mpiexec found beside this Python or on PATH: pip install "ferro-core[mpi]" '
                                "(MPICH brings mpiexec), or install your system's MPI")
    return found


def _hostfile_flag(mpiexec: str) -> str:
    import subprocess  # deferred: see find_mpiexec

    try:
        text = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    return "--hostfile" if "Open MPI" in text or "OpenRTE" in text else "-f"


def mpiexec_command(nprocs: int, argv: Sequence[str], hostfile: str | None = None,
                    mpiexec: str | None = None) -> list[str]:
    """The command line that runs ``python argv...`` in ``nprocs`` processes."""
    if nprocs < 1:
        raise ValueError(f"ferro run: -n must be at least 1, got {nprocs}")
    exe = mpiexec or find_mpiexec()
    cmd = [exe, "-n", str(nprocs)]
    if hostfile:
        if not os.path.exists(hostfile):
            raise FileNotFoundError(f"ferro run: hosts file {hostfile!r} does not exist")
        cmd += [_hostfile_flag(exe), hostfile]
    return [*cmd, sys.executable, *argv]


def launch(nprocs: int, argv: Sequence[str], hostfile: str | None = None) -> int:
    """Run ``python argv...`` in ``nprocs`` processes; the job's exit status."""
    import subprocess  # deferred: see find_mpiexec

    return subprocess.call(mpiexec_command(nprocs, argv, hostfile))
