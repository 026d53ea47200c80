"""accel.memory, DeviceBuffer and HostBuffer, with numpy."""
import collections
import gc

import numpy as np
import pytest

from conftest import BACKEND


def test_reexported(accel):
    for name in accel.memory.__all__:
        if name != "host_memory_stats":
            assert getattr(accel, name) is getattr(accel.memory, name), name


def test_memory_stats(accel):
    stats = accel.memory_stats()
    assert isinstance(stats, collections.OrderedDict)
    assert list(stats) == sorted(stats)
    for key in ["allocated_bytes.all.current", "reserved_bytes.all.peak",
                "requested_bytes.all.current", "requested_bytes.large_pool.peak",
                "active.small_pool.freed", "num_ooms", "num_alloc_retries"]:
        assert key in stats, key
    assert list(accel.memory_stats(0)) == list(accel.memory_stats(f"{BACKEND}:0")) == list(stats)


def test_allocated_and_peaks(accel):
    accel.synchronize()
    base = accel.memory_allocated()
    buf = accel.DeviceBuffer(1 << 20)
    assert accel.memory_allocated() >= base + (1 << 20)
    assert accel.max_memory_allocated() >= accel.memory_allocated()
    assert accel.memory_reserved() >= accel.memory_allocated()
    assert accel.max_memory_reserved() >= accel.memory_reserved()
    del buf
    gc.collect()
    accel.synchronize()
    assert accel.memory_allocated() == base
    accel.reset_peak_memory_stats()
    assert accel.max_memory_allocated() == base
    accel.reset_accumulated_memory_stats()
    assert accel.memory_stats()["allocation.all.allocated"] == 0
    accel.empty_cache()
    accel.empty_host_cache()


def test_memory_info_and_snapshot(accel):
    free, total = accel.get_memory_info()
    assert isinstance(free, int) and isinstance(total, int) and total > 0 and free <= total
    accel.record_memory_history(16)
    buf = accel.DeviceBuffer(4096)
    snap = accel.memory_snapshot()
    assert isinstance(snap, dict) and snap["backend"] == BACKEND and snap["device"] == 0
    assert any(b["address"] == buf.ptr for seg in snap["segments"] for b in seg["blocks"])
    assert snap["history"]["max_entries"] == 16
    assert any(ev["action"] == "alloc" for ev in snap["history"]["events"])
    accel.record_memory_history(0)
    with pytest.raises(ValueError):
        accel.record_memory_history(-1)
    with pytest.raises(accel.InvalidArgumentError):
        accel.record_memory_history(1 << 25)


def test_numpy_round_trip(accel):
    for d in range(accel.device_count()):
        a = np.arange(1 << 16, dtype=np.float32) * (d + 1)
        buf = accel.DeviceBuffer(a.nbytes, device=d)
        assert buf.device == accel.device(BACKEND, d) and buf.nbytes == a.nbytes and buf.ptr
        buf.copy_from(a)
        out = np.empty_like(a)
        assert buf.copy_to(out) is out
        np.testing.assert_array_equal(out, a)
        dup = accel.DeviceBuffer(a.nbytes, device=d).copy_from(buf)
        back = bytearray(a.nbytes)
        dup.copy_to(back)
        assert bytes(back) == a.tobytes()
        dup.fill_(0xAB)
        view = memoryview(bytearray(a.nbytes))
        dup.copy_to(view)
        assert set(view.tobytes()) == {0xAB}


def test_cross_device_copy(two_devices):
    accel = two_devices
    a = np.arange(4096, dtype=np.int32)
    b0 = accel.DeviceBuffer(a.nbytes, device=0).copy_from(a)
    b1 = accel.DeviceBuffer(a.nbytes, device=1).copy_from(b0)
    out = np.zeros_like(a)
    b1.copy_to(out)
    np.testing.assert_array_equal(out, a)


def test_buffer_argument_errors(accel):
    buf = accel.DeviceBuffer(64)
    with pytest.raises(ValueError, match="64"):
        buf.copy_from(bytes(32))
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        buf.copy_from(np.zeros(32, dtype=np.float32)[::2])
    with pytest.raises((BufferError, TypeError)):
        buf.copy_to(bytes(64))  # read-only
    with pytest.raises(TypeError):
        buf.copy_from(object())
    with pytest.raises(ValueError):
        buf.fill_(256)
    with pytest.raises(accel.InvalidArgumentError) as info:
        accel.DeviceBuffer(0)
    assert info.value.status == "INVALID_ARGUMENT"
    with pytest.raises(ValueError):
        accel.DeviceBuffer(-1)
    with pytest.raises(ValueError, match="doesn't match"):
        accel.DeviceBuffer(64, device="cpu:0")


def test_host_buffer_zero_copy(accel):
    hb = accel.HostBuffer(4096)
    assert hb.nbytes == 4096 and len(hb) == 4096
    arr = np.frombuffer(hb, dtype=np.uint32)
    assert arr.ctypes.data == hb.ptr and arr.size == 1024
    arr[:] = np.arange(1024, dtype=np.uint32)
    assert memoryview(hb)[4] == 1  # the same memory, seen through another view
    buf = accel.DeviceBuffer(4096).copy_from(hb)
    other = accel.HostBuffer(4096)
    buf.copy_to(other)
    np.testing.assert_array_equal(np.frombuffer(other, dtype=np.uint32), arr)
    del hb
    gc.collect()
    assert arr[1023] == 1023  # the view keeps the buffer alive
    with pytest.raises(accel.InvalidArgumentError):
        accel.HostBuffer(0)


def test_collected_with_copy_queued(accel, gates):
    """A DeviceBuffer collected while a copy into it is still queued behind a
    gate: freed in stream order, so the copy runs on live memory."""
    s = accel.Stream()
    gate = gates()
    base = accel.memory_allocated()
    src = accel.HostBuffer(1 << 16)
    np.frombuffer(src, dtype=np.uint8)[:] = 7
    s.launch_host_func(gate.wait)
    buf = accel.DeviceBuffer(1 << 16, stream=s)
    freed = buf.ptr
    buf.copy_from(src, non_blocking=True, stream=s)
    assert not s.query()
    del buf
    gc.collect()
    assert accel.memory_allocated() == base
    other = accel.DeviceBuffer(1 << 16, stream=accel.Stream())
    assert other.ptr != freed  # not reused by another stream while the copy waits
    gate.set()
    s.synchronize()
    again = accel.DeviceBuffer(1 << 16, stream=s).fill_(3, stream=s)
    out = bytearray(1 << 16)
    again.copy_to(out, stream=s)
    assert set(out) == {3}


def test_record_stream(accel):
    s = accel.Stream()
    buf = accel.DeviceBuffer(256)
    buf.record_stream(s)
    buf.fill_(1, stream=s)
    assert buf.stream == accel.current_stream()
    s.synchronize()


DLPACK_TYPES = {"cuda": 2, "opencl": 4, "hip": 10, "level_zero": 14, "sim": 12}


def dltensor(capsule):
    """(data, device_type, device_id, ndim, shape[0]) of a "dltensor" capsule."""
    import ctypes
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    addr = get(capsule, b"dltensor")

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
                    ("shape", ctypes.POINTER(ctypes.c_int64))]

    t = DLTensor.from_address(addr)
    return (t.data, t.device_type, t.device_id, t.ndim, (t.code, t.bits, t.lanes), t.shape[0])


def test_host_buffer_from_dlpack(accel):
    hb = accel.HostBuffer(256)
    assert hb.__dlpack_device__() == (1, 0)
    arr = np.from_dlpack(hb)
    assert arr.dtype == np.uint8 and arr.shape == (256,) and arr.ctypes.data == hb.ptr
    memoryview(hb)[:] = b"\x09" * 256  # numpy 1.x marks DLPack imports read-only
    assert (arr == 9).all()
    del hb
    gc.collect()
    assert arr[0] == 9  # the capsule's owner reference keeps the memory
    with pytest.raises(BufferError):
        accel.HostBuffer(8).__dlpack__(stream=5)


def test_device_buffer_dlpack(accel):
    d = accel.device_count() - 1
    buf = accel.DeviceBuffer(4096, device=d)
    assert buf.__dlpack_device__() == (DLPACK_TYPES[BACKEND], d)
    base = accel.memory_allocated(d)
    cap = buf.__dlpack__()
    assert dltensor(cap) == (buf.ptr, DLPACK_TYPES[BACKEND], d, 1, (1, 8, 1), 4096)
    del buf
    gc.collect()
    assert accel.memory_allocated(d) == base  # alive through the capsule
    del cap
    gc.collect()
    accel.synchronize(d)
    assert accel.memory_allocated(d) == base - 4096
    with pytest.raises(BufferError):
        accel.DeviceBuffer(8).__dlpack__(copy=True)


def test_dlpack_stream_is_ordered(accel, gates):
    """The consumer's stream waits for the producer's current stream."""
    buf = accel.DeviceBuffer(64)
    consumer = accel.Stream()
    gate = gates()
    accel.current_stream().launch_host_func(gate.wait)
    cap = buf.__dlpack__(stream=consumer.stream_id)
    marker = consumer.record_event()
    assert not marker.query()  # waits behind the gate
    gate.set()
    marker.synchronize()
    del cap
    # A vendor queue as the stream: ordered through a borrowed wrapper.
    native_consumer = accel.Stream()
    gate2 = gates()
    accel.current_stream().launch_host_func(gate2.wait)
    cap = buf.__dlpack__(stream=native_consumer.native_handle)
    marker = native_consumer.record_event()
    assert not marker.query()
    gate2.set()
    marker.synchronize()


def test_cuda_array_interface(accel):
    buf = accel.DeviceBuffer(128)
    if BACKEND != "cuda":
        assert not hasattr(buf, "__cuda_array_interface__")
        return
    cai = buf.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (128,) and cai["typestr"] == "|u1"
    assert cai["data"] == (buf.ptr, False) and cai["stream"] not in (None, 0)
