"""device_count() never initialises a vendor runtime: a fork child works
where the C API allows it (sim; cuda counting through NVML) and gets accel.Error FORKED where the
backend is not fork-safe even after counting (PoCL)."""
import os
import subprocess
import sys

import pytest

from conftest import BACKEND


def test_fork_after_device_count():
    script = os.path.join(os.path.dirname(__file__), "fork_child.py")
    out = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    if BACKEND == "opencl":
        assert out.returncode == 3, text
        assert "child error FORKED: FORKED:" in text and "fork" in text.lower()
    elif BACKEND in ("sim", "cuda"):
        # cuda: counted through the fake NVML, never cuInit, so the child
        # initialises the driver itself.
        assert out.returncode == 0 and "child ok" in text, text
    else:
        pytest.skip(f"what a fork child of {BACKEND} may do is that backend's own test")
