"""accel.Graph and accel.graph: torch's CUDA-graph API over accel's capture
and replay, on whatever backend is current (native or recorded)."""
import numpy
import pytest

from conftest import unraisable


def test_graph_context_manager_replays_the_capture(accel):
    buf = accel.DeviceBuffer(256)
    buf.fill_(0)
    ran = []
    g = accel.Graph()
    before = accel.current_stream()
    with g:
        assert accel.current_stream() != before  # captured on a side stream
        buf.fill_(7)
        accel.current_stream().launch_host_func(lambda: ran.append(1))
    assert accel.current_stream() == before
    accel.synchronize()
    out = numpy.zeros(256, numpy.uint8)
    buf.copy_to(out)
    assert not out.any() and ran == []  # captured, not run
    for _ in range(3):
        g.replay()
    accel.synchronize()
    buf.copy_to(out)
    assert (out == 7).all()
    assert ran == [1, 1, 1]
    g.reset()
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()


def test_graph_methods_keep_graph_pool_and_dump(accel, tmp_path):
    pool = accel.generate_graph_pool_handle()
    assert isinstance(pool, int) and pool > 0
    s = accel.Stream()
    buf = accel.DeviceBuffer(64)
    g = accel.Graph(keep_graph=True, pool=pool)
    with s:
        g.capture_begin()
        buf.fill_(3)
        g.capture_end()
        g.instantiate()
        g.replay()
    s.synchronize()
    out = bytearray(64)
    buf.copy_to(out)
    assert out == bytearray([3]) * 64
    assert g.pool() == pool
    path = tmp_path / "graph.dot"
    g.debug_dump(path)
    assert "digraph" in path.read_text()
    with pytest.raises(RuntimeError, match="reset"):
        g.capture_begin()  # still holds its capture


def test_graph_refusals(accel):
    g = accel.Graph()
    with pytest.raises(accel.Error) as e:
        g.capture_begin()  # the current stream is the default stream
    assert e.value.status == "STREAM_CAPTURE_UNSUPPORTED"
    with pytest.raises(ValueError, match="capture_error_mode"):
        accel.Graph(capture_error_mode="strict")
    with pytest.raises(TypeError):
        accel.Graph(pool=-1)
    with pytest.raises(RuntimeError, match="capture_begin"):
        g.capture_end()
    # A call the capture refuses invalidates it: the body's error is raised,
    # the capture is ended and the stream restored.
    before = accel.current_stream()
    with pytest.raises(accel.Error) as e:
        with g:
            accel.current_stream().synchronize()
    assert e.value.status == "STREAM_CAPTURE_UNSUPPORTED"
    assert accel.current_stream() == before
    with pytest.raises(RuntimeError, match="nothing captured"):
        g.replay()
    with g:  # the graph captures again after a failed capture
        pass
    g.replay()
    accel.synchronize()


def test_graph_on_a_given_stream_and_modes(accel):
    s = accel.Stream()
    buf = accel.DeviceBuffer(32)
    for mode in ("global", "thread_local", "relaxed"):
        g = accel.Graph()
        with accel.graph(g, stream=s, capture_error_mode=mode):
            assert accel.current_stream() == s
            buf.fill_(5)
        g.replay()
    with pytest.raises(TypeError):
        accel.graph(object())
    accel.synchronize()
    out = bytearray(32)
    buf.copy_to(out)
    assert out == bytearray([5]) * 32


def test_graph_host_function_raising_in_a_replay(accel):
    def boom():
        raise KeyError("from a replayed host function")

    g = accel.Graph()
    with g:
        accel.current_stream().launch_host_func(boom)
    with unraisable() as seen:
        g.replay()
        accel.synchronize()
    assert len(seen) == 1 and isinstance(seen[0].exc_value, KeyError)
