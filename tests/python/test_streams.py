"""accel.Stream and accel.Event: torch.Stream's and torch.Event's behaviour."""
import threading

import pytest

from conftest import BACKEND, unraisable


def test_current_stream_forms(accel):
    s = accel.current_stream()
    assert isinstance(s, accel.Stream)
    assert s == accel.current_stream(0) == accel.current_stream(f"{BACKEND}:0")
    assert s == accel.current_stream(accel.device(BACKEND, 0))
    assert s.device_index == 0 and s.device_type == BACKEND
    assert s.device == accel.device(BACKEND, 0)
    assert isinstance(s.native_handle, int) and s.native_handle != 0
    with pytest.raises(ValueError, match="doesn't match"):
        accel.current_stream("cpu")


# accel_native_type_t of each backend's handles.
NATIVE_TYPES = {"cuda": 1, "hip": 2, "level_zero": 3, "opencl": 4, "sim": 5}


def test_native_handles(accel):
    s = accel.Stream()
    native = s.native()
    assert native["backend"] == BACKEND and native["type"] == NATIVE_TYPES[BACKEND]
    assert native["handle"] == s.native_handle != 0
    assert accel.current_stream().native_handle != s.native_handle
    if BACKEND == "cuda":
        assert native["context"] != 0 and native["ordinal"] == 0


def test_stream_by_id(accel):
    s = accel.Stream(priority=0)
    named = accel.Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=BACKEND)
    assert named == s and hash(named) == hash(s)
    assert accel.Stream(stream_id=s.stream_id) == s
    with pytest.raises(ValueError):
        accel.Stream(stream_id=12345)
    with pytest.raises(ValueError, match="doesn't match"):
        accel.Stream(stream_id=s.stream_id, device_type="cpu")


def test_comparisons_never_crash(accel):
    s0, s1 = accel.Stream(), accel.Stream()
    assert s0 != s1 and not (s0 == s1)
    for other in [None, 1, "s", object(), accel.Event(), accel.device(BACKEND)]:
        assert (s0 == other) is False
        assert (s0 != other) is True
    for op in [lambda: s0 < s1, lambda: s0 <= s1, lambda: s0 > s1, lambda: s0 >= 1]:
        with pytest.raises(TypeError):
            op()
    assert len({s0, s1, accel.Stream(stream_id=s0.stream_id)}) == 2


def test_set_stream(two_devices):
    accel = two_devices
    s1 = accel.Stream(1)
    assert s1.device_index == 1
    accel.set_stream(s1)
    assert accel.current_device_index() == 1
    assert accel.current_stream() == s1
    assert accel.current_stream() is s1  # the owner, while it lives
    accel.set_stream(accel.current_stream(0))
    assert accel.current_device_index() == 0
    with pytest.raises(TypeError):
        accel.set_stream(0)


def test_context_manager_restores(two_devices):
    accel = two_devices
    default0, default1 = accel.current_stream(0), accel.current_stream(1)
    s0, s1 = accel.Stream(0), accel.Stream(1)
    with s0, s0:
        assert accel.current_stream() == s0
    assert accel.current_stream(0) == default0 and accel.current_device_index() == 0
    with s0:
        with s1:
            assert accel.current_device_index() == 1 and accel.current_stream() == s1
            with s0:
                assert accel.current_device_index() == 0 and accel.current_stream() == s0
            assert accel.current_device_index() == 1 and accel.current_stream() == s1
        assert accel.current_device_index() == 0 and accel.current_stream() == s0
    assert accel.current_stream(0) == default0 and accel.current_stream(1) == default1
    assert accel.current_device_index() == 0
    accel.set_device_index(1)
    with s0:
        assert accel.current_device_index() == 0
    assert accel.current_device_index() == 1


def test_query_synchronize_events(accel):
    s = accel.Stream()
    s.synchronize()
    assert s.query()
    e = s.record_event()
    assert isinstance(e, accel.Event)
    e.synchronize()
    assert e.query()
    other = accel.Stream()
    other.wait_event(e)
    other.wait_stream(s)
    e.wait(other)
    e.wait()
    other.synchronize()
    with pytest.raises(TypeError):
        s.wait_event(s)


def test_event_timing_errors(accel):
    a, b = accel.Event(), accel.Event()
    with pytest.raises(ValueError, match=r"Both events must be created with argument 'enable_timing=True'"):
        a.elapsed_time(b)
    ta, tb = accel.Event(enable_timing=True), accel.Event(enable_timing=True)
    with pytest.raises(ValueError, match="Both events must be recorded before calculating elapsed time"):
        ta.elapsed_time(tb)
    ta.record()
    tb.record()
    tb.synchronize()
    assert ta.elapsed_time(tb) >= 0.0
    assert accel.Event().query()  # never recorded: complete


def test_host_func_order_and_gil(accel):
    """A host function needs the GIL: synchronize waiting for it must release it."""
    s = accel.Stream()
    order = []
    for i in range(5):
        s.launch_host_func(lambda i=i: order.append(i))
    s.synchronize()
    assert order == list(range(5))
    gate = threading.Event()
    s.launch_host_func(gate.wait)
    threading.Timer(0.2, gate.set).start()
    accel.synchronize()  # waits for gate.wait(), which needs the GIL to return
    assert gate.is_set()


def test_host_func_exception_goes_to_unraisablehook(accel):
    s = accel.Stream()

    def boom():
        raise KeyError("from a host function")

    with unraisable() as seen:
        s.launch_host_func(boom)
        s.launch_host_func(s.synchronize)  # a wait for its own stream: refused, raised
        s.synchronize()
    unraisable_ = seen
    assert len(unraisable_) == 2
    assert isinstance(unraisable_[0].exc_value, KeyError)
    err = unraisable_[1].exc_value
    assert isinstance(err, accel.Error) and err.status == "INVALID_ARGUMENT"
    with pytest.raises(TypeError):
        s.launch_host_func(3)
