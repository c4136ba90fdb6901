"""What the first OpenCL use tells its user: that kernels are being compiled, how many, and how long.

OpenCL compiles each program from source on its first use on a device; the
OpenCL driver's cache (PoCL's kernel cache, ``POCL_CACHE_DIR``, or pyopencl's
binary cache for other drivers) makes later runs load them instead. A first run
that spends more than a second compiling says so on stderr, with a progress bar
(tqdm, from ``ferro-core[demo]``, when installed) and a summary at exit, so a
new user does not take a silent pause for a hang. ``FERRO_OPENCL_PROGRESS``:
``auto`` (the default: only on a terminal), ``1`` (always, from the first
program), ``0`` (never).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any, TextIO

__all__ = ["CompileNotice", "VARIABLE", "THRESHOLD_S"]

#: The environment variable that switches the notice: auto (default), 1, 0.
VARIABLE = "FERRO_OPENCL_PROGRESS"
#: Seconds of building after which the notice appears (``auto``).
THRESHOLD_S = 1.0


class CompileNotice:
    """Counts one device's program builds and, past the threshold, shows them on ``stream``."""

    def __init__(self, device_name: str, stream: TextIO | None = None) -> None:
        self.device_name = device_name
        self.stream = stream if stream is not None else sys.stderr
        self.count = 0
        self.seconds = 0.0
        self._shown = False
        self._bar: Any = None
        self._lock = threading.Lock()

    def _wanted(self) -> bool:
        mode = os.environ.get(VARIABLE, "auto").strip().lower()
        if mode == "1":
            return True
        if mode != "auto":
            return False
        return self.seconds > THRESHOLD_S and getattr(self.stream, "isatty", lambda: False)()

    def built(self, seconds: float) -> None:
        """One program was built (compiled, or loaded from the driver's cache) in ``seconds``."""
        with self._lock:
            self.count += 1
            self.seconds += seconds
            if self._shown:
                if self._bar is not None:
                    self._bar.update(1)
                return
            if self._wanted():
                self._show()

    def _show(self) -> None:
        self._shown = True
        atexit.register(self.summary)
        line = (f"ferro-opencl: compiling OpenCL kernels for {self.device_name} (first use; the driver caches them, "
                "so later runs load them)")
        try:
            from tqdm import tqdm
        except ImportError:  # without tqdm: the line, and the summary at exit
            print(line, file=self.stream, flush=True)
            return
        tqdm.write(line, file=self.stream)  # above the bars already on the terminal (a training loop's)
        self._bar = tqdm(initial=self.count, unit=" programs", desc="compiling", file=self.stream,
                         leave=False, dynamic_ncols=True)

    def summary(self) -> None:
        """Close the bar and say how many programs took how long (at exit, once shown)."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            if self._shown:
                print(f"ferro-opencl: built {self.count} OpenCL programs for {self.device_name} in "
                      f"{self.seconds:.1f} s", file=self.stream, flush=True)
                self._shown = False
