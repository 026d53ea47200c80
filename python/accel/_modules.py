"""accel.Module, accel.Kernel, accel.Image and accel.LocalMemory: kernels
from Python over accel's modules (include/accel/accel.h, docs/modules.md):
load the first image the device takes, launch with arguments of exact
widths."""
import ctypes
import os

import numpy

from . import _accel
from ._buffers import DeviceBuffer
from ._device import _get_device_index
from ._streams import Stream

__all__ = ["Image", "Module", "Kernel", "LocalMemory"]

# accel_module_format_t and accel_kernel_arg_kind_t / _type_t by number.
_FORMATS = ("ptx", "cubin", "fatbin", "amd_code_object", "spirv", "opencl_c", "native_binary",
            "sim_host")
_VALUE, _POINTER, _LOCAL = 0, 1, 2
_T_UNKNOWN, _T_INT, _T_FLOAT, _T_POINTER, _T_STRUCT = 0, 1, 2, 3, 4


class Image:
    """One kernel image: ``Image(format, data)`` with `format` one of
    ptx, cubin, fatbin, amd_code_object, spirv, opencl_c, native_binary,
    sim_host (accel_module_format_t) and `data` bytes, or str for the text
    formats; or a class method named after the format
    (``Image.opencl_c(src)``, ``Image.ptx(data)``, ...)."""

    def __init__(self, format, data):
        if format not in _FORMATS:
            raise ValueError(f"Image: format must be one of {', '.join(_FORMATS)}, got {format!r}")
        if isinstance(data, str):
            data = data.encode()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"Image: data must be bytes or str, got {type(data).__name__}")
        self.format = format
        self.data = bytes(data)

    def __repr__(self):
        return f"accel.Image({self.format!r}, {len(self.data)} bytes)"


def _image_maker(name):
    return classmethod(lambda cls, data: cls(name, data))


for _name in _FORMATS:
    setattr(Image, _name, _image_maker(_name))


class LocalMemory:
    """`nbytes` of local (shared) memory per block as a kernel argument
    (ACCEL_KERNEL_ARG_LOCAL_MEMORY; OpenCL's __local pointer parameter)."""

    def __init__(self, nbytes):
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"LocalMemory: nbytes must be a positive int, got {nbytes!r}")
        self.nbytes = nbytes


class Module:
    """A loaded module: ``Module.load(images, device=None, options=None)``
    (accel_module_load: the first image the device takes and that builds)
    or ``Module.load_file(paths, ...)`` (each file's format told from its
    bytes). Unloaded by ``unload()`` or when it and its kernels are
    collected; a graph holding one of its kernels keeps it loaded."""

    def __init__(self):
        raise TypeError("use accel.Module.load(images) or accel.Module.load_file(paths)")

    @classmethod
    def _made(cls, handle):
        m = cls.__new__(cls)
        m._handle = handle
        return m

    @classmethod
    def load(cls, images, device=None, options=None):
        images = list(images)
        if not images or not all(isinstance(i, Image) for i in images):
            raise TypeError("Module.load: images must be a non-empty list of accel.Image")
        pairs = [(_FORMATS.index(i.format), i.data) for i in images]
        return cls._made(_accel.module_load(_get_device_index(device, optional=True), pairs,
                                            options))

    @classmethod
    def load_file(cls, paths, device=None, options=None):
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        paths = [os.fspath(p) for p in paths]
        return cls._made(_accel.module_load_file(_get_device_index(device, optional=True), paths,
                                                 options))

    @property
    def format(self):
        """The format of the image that was loaded."""
        return _FORMATS[_accel.module_format(self._live())]

    def kernel(self, name):
        """The kernel `name` (accel_module_get_kernel)."""
        return Kernel(self, name, _accel.module_get_kernel(self._live(), name))

    def unload(self):
        """Unloads the module (accel_module_unload; waits for its device)."""
        handle, self._handle = self._handle, 0
        if handle:
            _accel.module_unload(handle)

    def _live(self):
        if not self._handle:
            raise RuntimeError("accel.Module: unloaded")
        return self._handle

    def __del__(self):
        try:
            self.unload()
        except Exception:  # a graph still holds it, or interpreter teardown
            pass

    @staticmethod
    def build_log():
        """The calling thread's last module build log."""
        return _accel.module_build_log()


def _arg(a):
    """(kind, value, type) of one launch argument."""
    if isinstance(a, DeviceBuffer):
        return _POINTER, a.ptr, _T_POINTER
    if isinstance(a, LocalMemory):
        return _LOCAL, a.nbytes, _T_UNKNOWN
    if isinstance(a, numpy.generic):
        kind = a.dtype.kind
        t = _T_FLOAT if kind == "f" else _T_INT if kind in "biu" else _T_STRUCT
        return _VALUE, a.tobytes(), t
    if isinstance(a, (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)):
        if isinstance(a, (ctypes.c_float, ctypes.c_double)):
            t = _T_FLOAT
        elif isinstance(a, ctypes._SimpleCData) and not isinstance(a, (ctypes.c_void_p, ctypes.c_char_p)):
            t = _T_INT
        else:
            t = _T_STRUCT
        return _VALUE, bytes(a), t
    if isinstance(a, (bool, int, float)):
        raise TypeError(f"a kernel argument {a!r} needs a width: pass numpy.float32({a!r}), "
                        f"numpy.uint32({a!r}), ctypes.c_int({a!r}), ...")
    raise TypeError(f"cannot pass {type(a).__name__} to a kernel: use an accel.DeviceBuffer, a "
                    "numpy scalar, a ctypes value or accel.LocalMemory")


def _dim3(v, what):
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                       for x in t):
        raise ValueError(f"{what} must be an int or up to 3 ints >= 0, got {v!r}")
    return list(t) + [1] * (3 - len(t))


class Kernel:
    """A kernel of a module (it keeps its module loaded)."""

    def __init__(self, module, name, handle):
        self.module = module
        self.name = name
        self._handle = handle

    @property
    def attributes(self):
        """What the kernel needs on its device (accel_kernel_get_attributes):
        max_threads_per_block, static_shared_bytes, private_bytes,
        num_registers, preferred_block_multiple, num_args (-1: not known)."""
        return _accel.kernel_attributes(self._handle)

    def launch(self, grid, block, *args, stream=None, shared_bytes=0):
        """Queues the kernel: `grid` blocks of `block` threads (ints or
        tuples of up to 3), on `stream` (None: the current stream of the
        kernel's device). A DeviceBuffer is a device pointer, numpy scalars
        and ctypes values are passed by value with their exact width,
        LocalMemory(n) is n bytes of local memory; a bare int or float
        raises TypeError (choose a width). accel_launch_kernel."""
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"Kernel.launch: stream must be an accel.Stream, got {stream!r}")
        if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, int) or shared_bytes < 0:
            raise ValueError(f"Kernel.launch: shared_bytes must be an int >= 0, got {shared_bytes!r}")
        _accel.kernel_launch(self._handle, _dim3(grid, "grid"), _dim3(block, "block"), shared_bytes,
                             stream._handle if stream is not None else 0, [_arg(a) for a in args])

    def __repr__(self):
        return f"accel.Kernel({self.name!r})"
