"""accel.Graph: torch's CUDA-graph API (torch.cuda.CUDAGraph, torch.cuda.graph)
over accel's stream capture and replay (include/accel/accel.h, docs/graphs.md),
on every backend: the vendor's graphs where the backend has them, accel's
recorder elsewhere."""
import gc
import threading

from . import _accel
from ._device import _get_device_index
from ._streams import Stream, _wrap

__all__ = ["Graph", "graph", "generate_graph_pool_handle"]

# accel_capture_mode_t by torch's capture_error_mode names ("default": torch's
# default, "global").
_MODES = {"default": 0, "global": 0, "thread_local": 1, "relaxed": 2}

# One side stream per device for `with graph:` (torch's default capture
# stream): a default stream cannot be captured.
_capture_streams = {}
_capture_lock = threading.Lock()


def _mode(name):
    if name not in _MODES:
        raise ValueError(f"capture_error_mode must be one of {sorted(_MODES)}, got {name!r}")
    return _MODES[name]


def _pool(pool):
    if pool is None:
        return 0
    if isinstance(pool, bool) or not isinstance(pool, int) or pool <= 0:
        raise TypeError(f"pool must be a handle from generate_graph_pool_handle() or "
                        f"Graph.pool(), got {pool!r}")
    return pool


def generate_graph_pool_handle(device=None):
    """A new memory pool handle of `device` (None: the current device) to
    share between captures (torch.cuda.graph_pool_handle,
    accel_graph_pool_handle): an int, never 0."""
    return _accel.graph_pool_handle(_get_device_index(device, optional=True))


class Graph:
    """Work captured from a stream, replayable (torch.cuda.CUDAGraph).

    ``capture_begin()`` starts recording the current stream (a created
    stream: a default stream is refused), ``capture_end()`` ends it, and
    ``replay()`` queues the recorded work on the current stream. As a
    context manager (``with g:``, or ``with accel.graph(g):``) it captures
    on a side stream of the current device, as torch.cuda.graph does.
    With ``keep_graph=False`` the capture is instantiated at
    ``capture_end``; with True at ``instantiate()`` or the first replay."""

    def __init__(self, keep_graph=False, *, pool=None, capture_error_mode="default"):
        self._keep = bool(keep_graph)
        self._pool_arg = _pool(pool)
        self._mode = _mode(capture_error_mode)
        self._handle = 0
        self._stream = None  # the stream being captured
        self._ctx = None     # the stream context of `with`

    def capture_begin(self, pool=None, capture_error_mode=None):
        """Begins capturing the current stream (accel_stream_begin_capture)."""
        if self._stream is not None:
            raise RuntimeError("Graph.capture_begin: this graph is already capturing")
        if self._handle:
            raise RuntimeError("Graph.capture_begin: this graph holds a capture; reset() it first")
        mode = self._mode if capture_error_mode is None else _mode(capture_error_mode)
        p = self._pool_arg if pool is None else _pool(pool)
        stream = _wrap(_accel.current_stream(-1))
        _accel.stream_begin_capture(stream._handle, mode, p)
        self._stream = stream

    def capture_end(self):
        """Ends the capture (accel_stream_end_capture); raises accel.Error
        with STREAM_CAPTURE_INVALIDATED when a refused call broke it."""
        if self._stream is None:
            raise RuntimeError("Graph.capture_end: capture_begin was not called")
        stream, self._stream = self._stream, None
        self._handle = _accel.stream_end_capture(stream._handle)
        if not self._keep:
            _accel.graph_instantiate(self._handle)

    def instantiate(self):
        """Prepares the graph for replay (accel_graph_instantiate); optional."""
        _accel.graph_instantiate(self._captured("instantiate"))

    def replay(self):
        """Queues the recorded work on the current stream of the graph's
        device (accel_graph_replay); releases the GIL."""
        _accel.graph_replay(self._captured("replay"), 0)

    def reset(self):
        """Destroys the captured graph (accel_graph_destroy); replays
        already queued still run. The Graph can capture again."""
        if self._handle:
            handle, self._handle = self._handle, 0
            _accel.graph_destroy(handle)

    def pool(self):
        """The memory pool handle of the graph's allocations, to share with
        another capture (accel_graph_pool)."""
        return _accel.graph_pool(self._captured("pool"))

    def debug_dump(self, debug_path):
        """Writes the graph as Graphviz DOT to `debug_path`."""
        _accel.graph_debug_dump(self._captured("debug_dump"), str(debug_path))

    def enable_debug_mode(self):
        """Kept for torch's API: accel keeps what debug_dump needs anyway."""

    def _captured(self, what):
        if not self._handle:
            raise RuntimeError(f"Graph.{what}: nothing captured (call capture_begin and "
                               "capture_end first)")
        return self._handle

    def __enter__(self):
        return self._enter_on(None)

    def _enter_on(self, stream):
        """Captures on `stream`, None: a side stream of the current device."""
        _accel.synchronize(-1)  # as torch.cuda.graph: nothing pending into the capture
        gc.collect()
        if stream is None:
            device = _accel.current_device_index()
            with _capture_lock:
                stream = _capture_streams.get(device)
                if stream is None:
                    stream = _capture_streams[device] = Stream(device)
        self._ctx = stream
        stream.__enter__()
        try:
            self.capture_begin()
        except BaseException:
            self._ctx = None
            stream.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        side, self._ctx = self._ctx, None
        try:
            if self._stream is not None:
                if exc_type is None:
                    self.capture_end()
                else:  # the body failed: end the capture, keep the body's exception
                    stream, self._stream = self._stream, None
                    try:
                        self._handle = _accel.stream_end_capture(stream._handle)
                        self.reset()
                    except _accel.Error:
                        pass
        finally:
            if side is not None:
                side.__exit__(None, None, None)
        return False

    def __del__(self):
        try:
            self.reset()
        except Exception:  # interpreter teardown
            pass

    def __repr__(self):
        return f"accel.Graph(captured={bool(self._handle)})"


class graph:
    """``with accel.graph(g, pool=None, stream=None,
    capture_error_mode="global"):`` captures the body into `g`
    (torch.cuda.graph): on `stream` when given, else on a side stream of the
    current device."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, Graph):
            raise TypeError(f"accel.graph: expected an accel.Graph, got {cuda_graph!r}")
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"accel.graph: stream must be an accel.Stream, got {stream!r}")
        self._g = cuda_graph
        self._pool = _pool(pool)
        self._stream = stream
        self._mode = _mode(capture_error_mode)

    def __enter__(self):
        self._g._mode = self._mode
        if self._pool:
            self._g._pool_arg = self._pool
        return self._g._enter_on(self._stream)

    def __exit__(self, exc_type, exc, tb):
        return self._g.__exit__(exc_type, exc, tb)
