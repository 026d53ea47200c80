"""Shared fixtures of the accel Python suite (run by run_pytest.py)."""
import contextlib
import faulthandler
import os
import sys
import threading

import pytest

# Watchdog: a hang (a lost wake-up, a GIL held across a wait) prints every
# thread's stack and ends the process instead of waiting for Meson's timeout.
faulthandler.dump_traceback_later(float(os.environ.get("ACCEL_TEST_WATCHDOG_S", "240")), exit=True)

BACKEND = os.environ.get("ACCEL_TEST_BACKEND", "sim")
DEVICES = int(os.environ.get("ACCEL_TEST_DEVICES", "0"))


@pytest.fixture
def accel():
    import accel as module
    assert module.current_accelerator().type == BACKEND
    module.set_device_index(0)
    yield module
    module.synchronize()
    module.set_device_index(0)


@pytest.fixture
def two_devices(accel):
    if accel.device_count() < 2:
        pytest.skip(f"{BACKEND} has {accel.device_count()} device(s); this needs 2")
    return accel


@pytest.fixture
def gates():
    """Makes gates (threading.Event) for host functions to wait on; all are
    opened when the test ends, failed or not, so no stream stays blocked
    (the accel fixture's synchronize would wait for it forever)."""
    made = []

    def make():
        made.append(threading.Event())
        return made[-1]

    yield make
    for g in made:
        g.set()


@contextlib.contextmanager
def unraisable():
    """The exceptions that reach sys.unraisablehook inside the block (set
    in the test body: pytest's own hook is installed for the call phase)."""
    seen = []
    saved = sys.unraisablehook
    sys.unraisablehook = seen.append
    try:
        yield seen
    finally:
        sys.unraisablehook = saved
