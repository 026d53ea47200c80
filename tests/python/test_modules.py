"""accel.Module, accel.Kernel, accel.Image, accel.LocalMemory: the
repository's kernels (kernels/) from Python, results checked where the
backend runs kernels (sim, PoCL; the CUDA fake loads and launches only)."""
import ctypes
import os
import subprocess
import sys

import numpy
import pytest

from conftest import BACKEND

KERNELS = os.environ.get("ACCEL_TEST_KERNELS", "")
SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "accel_kernels.cl")
RUNS_KERNELS = BACKEND in ("sim", "opencl")


def images(accel):
    out = [accel.Image.opencl_c(open(SOURCE).read())]
    for name, make in (("accel_kernels_sim.so", accel.Image.sim_host),
                       ("accel_kernels.ptx", accel.Image.ptx)):
        path = os.path.join(KERNELS, name)
        if os.path.exists(path):
            out.append(make(open(path, "rb").read()))
    return out


def paths():
    return [SOURCE] + [os.path.join(KERNELS, n) for n in ("accel_kernels_sim.so", "accel_kernels.ptx")
                       if os.path.exists(os.path.join(KERNELS, n))]


@pytest.fixture
def module(accel):
    m = accel.Module.load(images(accel))
    yield m
    accel.synchronize()


def saxpy_on(accel, kernel, n, alpha, x, y):
    dx, dy = accel.DeviceBuffer(x.nbytes), accel.DeviceBuffer(y.nbytes)
    dx.copy_from(x)
    dy.copy_from(y)
    kernel.launch((n + 63) // 64, 64, numpy.float32(alpha), dx, dy, ctypes.c_uint32(n))
    return dx, dy


def test_load_launch_and_check(accel, module):
    assert module.format in ("opencl_c", "sim_host", "ptx")
    saxpy = module.kernel("saxpy")
    attrs = saxpy.attributes
    assert attrs["num_args"] in (4, -1)
    assert attrs["max_threads_per_block"] == -1 or attrs["max_threads_per_block"] >= 64
    n = 1000
    x = numpy.arange(n, dtype=numpy.float32)
    y = numpy.ones(n, dtype=numpy.float32)
    _, dy = saxpy_on(accel, saxpy, n, 3.0, x, y)
    out = numpy.empty_like(y)
    dy.copy_to(out)
    if RUNS_KERNELS:
        assert (out == numpy.float32(3.0) * x + y).all()


def test_local_memory_and_grids(accel, module):
    reduce_sum = module.kernel("reduce_sum")
    n, block = 1024, 64
    x = numpy.ones(n, dtype=numpy.float32)
    dx, dp = accel.DeviceBuffer(x.nbytes), accel.DeviceBuffer(4 * (n // block))
    dx.copy_from(x)
    reduce_sum.launch(n // block, block, dx, dp, accel.LocalMemory(4 * block), numpy.uint32(n))
    partial = numpy.empty(n // block, dtype=numpy.float32)
    dp.copy_to(partial)
    if RUNS_KERNELS:
        assert (partial == block).all()
    reduce_sum.launch(0, block, dx, dp, accel.LocalMemory(4 * block), numpy.uint32(n))  # no work
    with pytest.raises(ValueError):
        accel.LocalMemory(0)
    with pytest.raises(ValueError, match="grid"):
        reduce_sum.launch((1, 2, 3, 4), block)


def test_arguments_need_a_width(accel, module):
    saxpy = module.kernel("saxpy")
    dx = accel.DeviceBuffer(16)
    for bare in (2.0, 7, True):
        with pytest.raises(TypeError, match="width"):
            saxpy.launch(1, 1, bare, dx, dx, numpy.uint32(4))
    with pytest.raises(TypeError, match="cannot pass"):
        saxpy.launch(1, 1, numpy.float32(1), "x", dx, numpy.uint32(4))
    with pytest.raises(accel.InvalidArgumentError):
        saxpy.launch(1, 1, numpy.float32(1), dx)  # too few
    if BACKEND == "opencl":  # the backend knows the parameters' types
        with pytest.raises(accel.InvalidArgumentError):
            saxpy.launch(1, 1, numpy.int32(1), dx, dx, numpy.uint32(4))


def test_load_refusals(accel):
    with pytest.raises(TypeError):
        accel.Module()
    with pytest.raises(TypeError):
        accel.Module.load([])
    with pytest.raises(ValueError):
        accel.Image("wasm", b"")
    with pytest.raises(accel.InvalidArgumentError):
        accel.Module.load_file(["/nonexistent/kernels.cl"])
    m = accel.Module.load_file(paths())
    with pytest.raises(accel.Error):
        m.kernel("no_such_kernel")
    m.unload()
    with pytest.raises(RuntimeError, match="unloaded"):
        m.kernel("saxpy")


def test_kernel_in_a_graph(accel, module):
    saxpy = module.kernel("saxpy")
    n = 256
    x = numpy.arange(n, dtype=numpy.float32)
    y = numpy.zeros(n, dtype=numpy.float32)
    dx, dy = accel.DeviceBuffer(x.nbytes), accel.DeviceBuffer(y.nbytes)
    dx.copy_from(x)
    dy.copy_from(y)
    g = accel.Graph()
    with g:
        saxpy.launch(n // 64, 64, numpy.float32(1.0), dx, dy, numpy.uint32(n))
    with pytest.raises(accel.InvalidArgumentError):
        module.unload()  # a graph holds its kernel
    g.replay()
    g.replay()
    out = numpy.empty_like(y)
    dy.copy_to(out)
    if RUNS_KERNELS:
        assert (out == 2 * x).all()
    g.reset()
    module.unload()


@pytest.mark.skipif(not RUNS_KERNELS, reason=f"{BACKEND} does not run kernels")
def test_example_saxpy(accel, tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "saxpy.py")
    out = subprocess.run([sys.executable, example] + paths(), capture_output=True, text=True,
                         timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"on {BACKEND} device 0" in out.stdout and "correct" in out.stdout
