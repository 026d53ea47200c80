"""accel.DeviceBuffer and accel.HostBuffer: device memory from the
stream-ordered caching allocator and pinned host memory, usable with any
C-contiguous buffer-protocol object (numpy arrays, bytearray, memoryview)."""
from . import _accel
from ._device import _get_device_index, device
from ._streams import Stream, _wrap

__all__ = ["DeviceBuffer", "HostBuffer"]


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
            stream = _wrap(_accel.current_stream(_get_device_index(device, optional=True)))
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

    def __repr__(self):
        return f"accel.HostBuffer(nbytes={self.nbytes}, ptr={self.ptr:#x})"
