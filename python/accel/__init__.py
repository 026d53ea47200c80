"""accel: torch.accelerator's API over libaccelcore, for every backend.

The names, signatures and errors follow torch.accelerator (positional-only
where torch has ``/``); a device argument is an int, a str ("sim:1") or an
accel.device. Every failure of the C API raises accel.Error (a
RuntimeError; accel.InvalidArgumentError, also a ValueError, for
INVALID_DEVICE and INVALID_ARGUMENT) with ``.status``, the status name, and
accel_last_error()'s text. Calls that can block release the GIL.
docs/python.md has the whole API.
"""
import atexit as _atexit
import warnings as _warnings

from . import _accel
from . import memory
from ._accel import Error, InvalidArgumentError
from ._buffers import DeviceBuffer, HostBuffer
from ._device import _get_device_index, device
from ._graphs import Graph, generate_graph_pool_handle, graph
from ._modules import Image, Kernel, LocalMemory, Module
from ._streams import Event, Stream
from .memory import (empty_cache, empty_host_cache, get_memory_info, max_memory_allocated,
                     max_memory_reserved, memory_allocated, memory_reserved, memory_snapshot,
                     memory_stats, record_memory_history, reset_accumulated_memory_stats,
                     reset_peak_memory_stats)

__version__ = _accel.version()

__all__ = [
    "Error", "InvalidArgumentError", "device", "Stream", "Event", "DeviceBuffer", "HostBuffer",
    "is_available", "current_accelerator", "device_count", "current_device_index",
    "set_device_index", "current_device_idx", "set_device_idx", "current_stream", "set_stream",
    "synchronize", "device_index", "get_device_capability", "selection_reason", "memory",
    "empty_cache", "empty_host_cache", "get_memory_info", "memory_stats", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "memory_snapshot", "record_memory_history",
    "Graph", "graph", "generate_graph_pool_handle", "Image", "Module", "Kernel", "LocalMemory",
]

# Names of c10::ScalarType by number, as accel_dtype_t numbers them.
_DTYPE_NAMES = {
    0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
    7: "float64", 8: "complex32", 9: "complex64", 10: "complex128", 11: "bool", 15: "bfloat16",
}


def is_available():
    """True when a current accelerator exists (runs plugin discovery once)."""
    return _accel.is_available()


def current_accelerator(check_available=False):
    """The current accelerator as an accel.device (type: the backend name,
    index None), or None when there is none (with check_available, also
    when it has no device)."""
    name = _accel.current_accelerator()
    if name is None or (check_available and not _accel.is_available()):
        return None
    return device(name)


def selection_reason():
    """Why the current accelerator is what it is, or why there is none."""
    return _accel.selection_reason()


def device_count():
    """Devices of the current accelerator; 0 when none. Never initialises a
    vendor runtime, so it is safe before os.fork()."""
    return _accel.device_count()


# The extension's functions themselves: device-agnostic code calls these
# around every operation (docs/performance.md, "Python").
current_device_index = _accel.current_device_index
current_stream = _accel.current_stream_object


def set_device_index(device, /):
    """Makes `device` current on this thread. A negative index is a no-op;
    a device of another type raises ValueError."""
    _accel.set_device_index(_get_device_index(device))


def current_device_idx():
    """Deprecated alias of current_device_index (FutureWarning), as in torch."""
    _warnings.warn("accel.current_device_idx is deprecated, use accel.current_device_index",
                   FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device, /):
    """Deprecated alias of set_device_index (FutureWarning), as in torch."""
    _warnings.warn("accel.set_device_idx is deprecated, use accel.set_device_index",
                   FutureWarning, stacklevel=2)
    set_device_index(device)


def set_stream(stream):
    """Makes `stream` current on its device and its device current."""
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream expects an accel.Stream, got {stream!r}")
    _accel.set_stream(stream.stream_id)


def synchronize(device=None, /):
    """Waits (GIL released) for all work on `device` (None: the current one)."""
    _accel.synchronize(_get_device_index(device, optional=True))


def get_device_capability(device=None, /):
    """{"supported_dtypes": set of dtype names as torch spells them}."""
    mask = _accel.supported_dtypes(_get_device_index(device, optional=True))
    return {"supported_dtypes": {n for bit, n in _DTYPE_NAMES.items() if mask >> bit & 1}}


class device_index:
    """Context manager making `device` current and restoring the previous
    device on exit; None switches nothing. torch.accelerator.device_index."""

    # __slots__ and the extension's calls bound as defaults: entering and
    # leaving is two C calls and what Python's with statement costs.
    __slots__ = ("idx", "prev_idx")

    def __init__(self, device, /):
        self.idx = device if type(device) is int else (
            None if device is None else _get_device_index(device))
        self.prev_idx = -1

    def __enter__(self, _exchange=_accel.exchange_device):
        if self.idx is not None:
            self.prev_idx = _exchange(self.idx)
        return self

    def __exit__(self, *exc_info, _maybe_exchange=_accel.maybe_exchange_device):
        if self.idx is not None:
            _maybe_exchange(self.prev_idx)
        return False


def _drain_host_funcs():
    # Host functions still queued at exit need the interpreter to run.
    _accel.drain_host_calls(10.0)


_atexit.register(_drain_host_funcs)
