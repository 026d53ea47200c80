#!/usr/bin/env python3
"""saxpy.py - the repository's saxpy kernel (kernels/) from Python, on
whatever accelerator is current: y = alpha * x + y over n floats, checked.

    saxpy.py [IMAGE ...]

Each IMAGE is a kernel file of kernels/ (the OpenCL C source, the sim
plugin's kernels/accel_kernels_sim.so of a build, PTX, SPIR-V, an AMD code
object): the first one the device takes is loaded. Without arguments, the
OpenCL C source next to this repository's examples/ and, from a build in
build/, the sim kernels and the PTX. From the source tree:

    meson devenv -C build -w . /usr/bin/python3 examples/python/saxpy.py
"""
import os
import sys

import numpy

import accel


def default_images():
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    candidates = [os.path.join(repo, "kernels", "accel_kernels.cl"),
                  os.path.join(repo, "build", "kernels", "accel_kernels_sim.so"),
                  os.path.join(repo, "build", "kernels", "accel_kernels.ptx")]
    return [p for p in candidates if os.path.exists(p)]


def main(paths):
    if not accel.is_available():
        print(f"saxpy.py: no accelerator: {accel.selection_reason()}")
        return 77
    module = accel.Module.load_file(paths or default_images())
    saxpy = module.kernel("saxpy")
    n, alpha = 1 << 16, numpy.float32(2.5)
    x = numpy.arange(n, dtype=numpy.float32)
    y = numpy.full(n, 1.0, dtype=numpy.float32)
    dx, dy = accel.DeviceBuffer(x.nbytes), accel.DeviceBuffer(y.nbytes)
    dx.copy_from(x)
    dy.copy_from(y)
    block = 256
    saxpy.launch((n + block - 1) // block, block, alpha, dx, dy, numpy.uint32(n))
    out = numpy.empty_like(y)
    dy.copy_to(out)  # waits for the stream
    want = alpha * x + y
    bad = numpy.flatnonzero(out != want)
    where = accel.current_accelerator().type
    if bad.size:
        i = bad[0]
        print(f"saxpy.py: {where} ({module.format}): y[{i}] = {out[i]}, expected {want[i]}")
        return 1
    print(f"saxpy.py: {n} elements on {where} device {accel.current_device_index()} "
          f"({module.format}), alpha {alpha}: correct")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
