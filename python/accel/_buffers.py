"""accel.DeviceBuffer and accel.HostBuffer: device memory from the
stream-ordered caching allocator and pinned host memory, usable with any
C-contiguous buffer-protocol object (numpy arrays, bytearray, memoryview)."""
from . import _accel
from ._device import _get_device_index, device
from ._streams import Stream, _wrap

__all__ = ["DeviceBuffer", "HostBuffer"]

# DLPack's DLDeviceType of each backend's device memory; host memory is kDLCPU
# (numpy.from_dlpack takes only that).
kDLCPU = 1
_DLPACK_DEVICE_TYPES = {"cuda": 2, "opencl": 4, "hip": 10, "level_zero": 14}
kDLExtDev = 12  # sim, and any backend DLPack has no type for


def _no_copy_checks(copy, dl_device, want):
    if copy:
        raise BufferError("__dlpack__: copy=True is not supported (the capsule views the memory)")
    if dl_device is not None and tuple(dl_device) != want:
        raise BufferError(f"__dlpack__: the buffer is on DLPack device {want}, not {tuple(dl_device)}")


def _stream_id(stream):
    if stream is None:
        return 0
    if not isinstance(stream, Stream):
        raise TypeError(f"stream must be an accel.Stream or None, got {stream!r}")
    return stream.stream_id


class DeviceBuffer(_accel.DeviceBuffer):
    """``nbytes`` bytes of device memory, allocated in the order of `stream`
    (None: the current stream of `device`, itself None for the current
    device; accel_malloc_async) and freed in that stream's order when
    collected (accel_free_async), so work still queued on it, or on a
    stream named with record_stream or used by a copy, completes first.
    nbytes 0 raises accel.InvalidArgumentError."""

    def __init__(self, nbytes, device=None, stream=None):
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError(f"DeviceBuffer: nbytes must be an int >= 0, got {nbytes!r}")
        if stream is None:
            stream = _accel.current_stream_object(device)
        elif device is not None and _get_device_index(device, optional=True) != stream.device_index:
            raise ValueError(
                f"DeviceBuffer: stream is on device {stream.device_index}, not {device}")
        super().__init__(nbytes, _stream_id(stream))
        # Keeps the allocating stream (when this package made it) alive
        # until the memory has been freed on it.
        self._stream = stream

    @property
    def device(self):
        return device(_accel.current_accelerator(), self.device_index)

    @property
    def stream(self):
        """The stream the memory was allocated on."""
        return self._stream

    def copy_from(self, src, non_blocking=False, stream=None):
        """Copies all of `src` (a C-contiguous buffer-protocol object or a
        DeviceBuffer, of exactly nbytes bytes) into this buffer on `stream`
        (None: the current stream of this buffer's device). Blocking unless
        `non_blocking`; pageable host memory is read before the call returns
        either way (accel_memcpy_async's rules). Returns self."""
        self._copy_from(src, bool(non_blocking), _stream_id(stream))
        return self

    def copy_to(self, dst, non_blocking=False, stream=None):
        """Copies this buffer into `dst` (a writable C-contiguous
        buffer-protocol object or a DeviceBuffer of exactly nbytes bytes).
        A copy to pageable memory has completed when the call returns.
        Returns `dst`."""
        self._copy_to(dst, bool(non_blocking), _stream_id(stream))
        return dst

    def fill_(self, value, stream=None):
        """Queues setting every byte to `value` (0 to 255) on `stream`
        (None: the current stream of the device); returns self."""
        self._fill(value, _stream_id(stream))
        return self

    def record_stream(self, stream):
        """Marks the memory as used by `stream` too: when collected it is
        reused only after the work queued on `stream` up to then
        (accel_record_stream, torch.Tensor.record_stream)."""
        self._record_stream(_stream_id(stream))

    def __dlpack_device__(self):
        """(DLDeviceType, device index): kDLCUDA, kDLROCM, kDLOneAPI,
        kDLOpenCL, or kDLExtDev for sim."""
        backend = _accel.current_accelerator()
        return (_DLPACK_DEVICE_TYPES.get(backend, kDLExtDev), self.device_index)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule (1-D uint8, nbytes long) viewing this buffer; it
        keeps the buffer alive. `stream`: the consumer's stream, which is
        made to wait for the work queued so far on the current stream of the
        buffer's device: an accel.Stream's stream_id, or a vendor queue
        (CUstream, cl_command_queue, ...) as an int; -1: no ordering; None
        (or 1 and 2, CUDA's legacy and per-thread default streams): the
        current stream is synchronized."""
        _no_copy_checks(copy, dl_device, self.__dlpack_device__())
        if stream is None or stream in (1, 2):
            _accel.stream_synchronize(_accel.current_stream(self.device_index))
        elif stream != -1:
            _order_stream(stream, self.device_index)
        return _accel.dlpack_capsule(self, self.ptr, self.nbytes, *self.__dlpack_device__())

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface v3 (on the cuda backend only): a 1-D uint8
        array of nbytes, with the current stream of the buffer's device."""
        if _accel.current_accelerator() != "cuda":
            raise AttributeError("__cuda_array_interface__ is only defined on the cuda backend")
        handle = _accel.stream_native_handle(_accel.current_stream(self.device_index))["handle"]
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": handle or 1}

    def __repr__(self):
        return f"accel.DeviceBuffer(nbytes={self.nbytes}, device={self.device}, ptr={self.ptr:#x})"


class HostBuffer(_accel.HostBuffer):
    """``nbytes`` bytes of pinned host memory from the pinned host cache
    (accel_host_malloc): copies between it and device memory are truly
    asynchronous. It exposes the buffer protocol (unsigned bytes), so
    ``memoryview(buf)`` and ``numpy.frombuffer(buf, dtype)`` view it without
    a copy; those views keep it alive. Collected, the block is reused only
    once the copies queued from or to it have completed."""

    def __init__(self, nbytes):
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
            raise ValueError(f"HostBuffer: nbytes must be an int >= 0, got {nbytes!r}")
        super().__init__(nbytes)

    def __len__(self):
        return self.nbytes

    def __dlpack_device__(self):
        """(kDLCPU, 0): pinned memory is host memory to a consumer."""
        return (kDLCPU, 0)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule (1-D uint8) viewing this buffer without a copy,
        keeping it alive: numpy.from_dlpack(buf). `stream` must be None
        or -1 (host memory has no stream)."""
        _no_copy_checks(copy, dl_device, self.__dlpack_device__())
        if stream not in (None, -1):
            raise BufferError("__dlpack__: a host buffer takes no stream")
        return _accel.dlpack_capsule(self, self.ptr, self.nbytes, kDLCPU, 0)

    def __repr__(self):
        return f"accel.HostBuffer(nbytes={self.nbytes}, ptr={self.ptr:#x})"


def _order_stream(stream, device_index):
    if isinstance(stream, Stream):
        stream = stream.stream_id
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {stream!r}")
    from ._streams import _known, _known_lock
    with _known_lock:
        known = stream in _known
    current = _accel.current_stream(device_index)
    if known:
        if stream != current:
            consumer = _wrap(stream)
            consumer.wait_stream(_wrap(current))
    else:
        _accel.order_native(device_index, stream)
