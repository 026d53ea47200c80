"""Counts devices, forks, and has the child use a device (test_fork.py).

Prints "child ok" when the child's work succeeded, or "child error STATUS:
MESSAGE" when it raised accel.Error; the process exits with the child's status."""
import os
import sys

import accel

n = accel.device_count()
assert n >= 1
pid = os.fork()
if pid == 0:
    try:
        buf = accel.DeviceBuffer(1024)
        buf.fill_(5)
        out = bytearray(1024)
        buf.copy_to(out)
        assert set(out) == {5}
        accel.synchronize()
        print("child ok", flush=True)
        code = 0
    except accel.Error as e:
        print(f"child error {e.status}: {e}", flush=True)
        code = 3
    except BaseException as e:  # anything else is a failure of the test
        print(f"child failed: {e!r}", flush=True)
        code = 1
    os._exit(code)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
