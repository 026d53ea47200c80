"""accel.Stream and accel.Event: torch.Stream and torch.Event over accel's
streams and events (include/accel/accel.h)."""
import threading
import weakref

from . import _accel
from ._device import _get_device_index, device

__all__ = ["Stream", "Event"]

# Streams this package created, by handle: current_stream() and
# Stream(stream_id=...) hand out the object that owns the stream while it
# lives, so the stream is destroyed only once nothing refers to it.
_owners = weakref.WeakValueDictionary()
# The same for the extension's accel.current_stream() (set_stream_tables
# below): weak references to the owners by handle, and the borrowed views
# _wrap made (a default stream's, a stream made in C), kept so that the next
# call hands out the same object. Handles are never reused, so a view is
# never wrong, only unused once its stream is gone: at most _VIEWS_MAX are kept.
_owner_refs = {}
_views = {}
_VIEWS_MAX = 1024
# Every handle the C API gave this process. accel can tell a destroyed
# handle (its memory is never returned), not an integer that never was one,
# so Stream(stream_id=...) accepts only these.
_known = set()
_known_lock = threading.Lock()


def _remember(handle):
    with _known_lock:
        _known.add(handle)
    return handle


def _wrap(handle):
    """The Stream for a handle: its owner if alive, else a borrowed view."""
    owner = _owners.get(handle)
    if owner is not None:
        return owner
    view = _views.get(handle)
    if view is not None:
        return view
    _remember(handle)
    s = Stream.__new__(Stream)
    s._init(handle, owned=False)
    if len(_views) >= _VIEWS_MAX:
        _views.clear()
    _views[handle] = s
    return s


def _forget_owner(handle):
    return lambda ref: _owner_refs.pop(handle, None) if _owner_refs.get(handle) is ref else None


class Stream:
    """An in-order queue of work on one device: ``Stream(device=None,
    priority=0)`` makes a new one (accel_stream_create; lower priority
    numbers run first, clamped into the device's range);
    ``Stream(stream_id=, device_index=, device_type=)`` names an existing
    stream (equal to it). As a context manager it makes itself and its
    device current and restores both on exit (re-entrant). torch.Stream."""

    def __init__(self, device=None, priority=0, *, stream_id=None, device_index=None,
                 device_type=None):
        if stream_id is not None:
            self._init(self._named(stream_id, device_index, device_type), owned=False)
            return
        if device_index is not None or device_type is not None:
            raise ValueError("Stream: device_index and device_type go with stream_id")
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(f"Stream: priority must be an int, got {priority!r}")
        index = _get_device_index(device, optional=True)
        handle = _remember(_accel.stream_create(index, priority))
        self._init(handle, owned=True)
        _owners[handle] = self
        _owner_refs[handle] = weakref.ref(self, _forget_owner(handle))

    @staticmethod
    def _named(stream_id, device_index, device_type):
        if isinstance(stream_id, bool) or not isinstance(stream_id, int):
            raise TypeError(f"Stream: stream_id must be an int, got {stream_id!r}")
        with _known_lock:
            known = stream_id in _known
        if not known:
            raise ValueError(f"Stream: stream_id {stream_id:#x} is not a stream of this process")
        if device_type is not None and device_type != _accel.current_accelerator():
            raise ValueError(
                f"{device_type} doesn't match the current accelerator {_accel.current_accelerator()}.")
        if device_index is not None and device_index != _accel.stream_device(stream_id):
            raise ValueError(f"Stream: stream {stream_id:#x} is not on device {device_index}")
        return stream_id

    def _init(self, handle, owned):
        self._handle = handle
        self._owned = owned
        self._device_index = _accel.stream_device(handle)
        self._saved = threading.local()

    def __del__(self):
        if getattr(self, "_owned", False):
            try:
                _accel.stream_destroy(self._handle)
            except Exception:  # a fork child, interpreter shutdown: nothing to undo
                pass

    @property
    def stream_id(self):
        """The stream's handle as an int (accel_stream_t)."""
        return self._handle

    @property
    def device_index(self):
        return self._device_index

    @property
    def device_type(self):
        """The backend's name ("sim", "cuda", ...)."""
        return _accel.current_accelerator()

    @property
    def device(self):
        return device(self.device_type, self._device_index)

    @property
    def priority(self):
        return _accel.stream_priority(self._handle)

    @property
    def native_handle(self):
        """The vendor queue (CUstream, cl_command_queue, ...) as an int;
        borrowed, valid while the stream lives (accel_stream_native_handle)."""
        return _accel.stream_native_handle(self._handle)["handle"]

    def native(self):
        """accel_stream_native_handle as a dict: type, backend, handle,
        context, ordinal."""
        return _accel.stream_native_handle(self._handle)

    def query(self):
        """True when all work queued on the stream has completed; never blocks."""
        return _accel.stream_query(self._handle)

    def synchronize(self):
        """Waits (GIL released) for all work queued on the stream."""
        _accel.stream_synchronize(self._handle)

    def wait_event(self, event):
        """Makes later work on this stream wait for `event`'s last record
        (a never-recorded event: no wait). Does not block the host."""
        if not isinstance(event, Event):
            raise TypeError(f"wait_event expects an accel.Event, got {event!r}")
        if event._handle is not None:
            _accel.stream_wait_event(self._handle, event._handle)

    def wait_stream(self, stream):
        """Makes later work on this stream wait for the work queued on
        `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError(f"wait_stream expects an accel.Stream, got {stream!r}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records `event` (a new Event when None) on this stream; returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def launch_host_func(self, fn):
        """Runs ``fn()`` in stream order on a thread of the backend, holding
        the GIL only while it runs. An exception it raises goes to
        sys.unraisablehook. It must not wait for this stream
        (accel_launch_host_func, cuLaunchHostFunc)."""
        _accel.launch_host_func(self._handle, fn)

    def __enter__(self):
        stack = getattr(self._saved, "stack", None)
        if stack is None:
            stack = self._saved.stack = []
        prev_index = _accel.current_device_index()
        prev_stream = _accel.current_stream(self._device_index)
        _accel.set_stream(self._handle)
        stack.append((prev_index, prev_stream))
        return self

    def __exit__(self, *exc_info):
        prev_index, prev_stream = self._saved.stack.pop()
        _accel.set_stream(prev_stream)
        _accel.set_device_index(prev_index)
        return False

    def __eq__(self, other):
        if not isinstance(other, Stream):
            return NotImplemented
        return self._handle == other._handle

    def __hash__(self):
        return hash(("accel.Stream", self._handle))

    def __repr__(self):
        return (f"accel.Stream(device_type={self.device_type!r}, "
                f"device_index={self._device_index}, stream_id={self._handle:#x})")


class Event:
    """A marker recorded on a stream, for ordering and timing (torch.Event,
    torch.cuda.Event). Its accel event is made at the first record, on the
    recording stream's device."""

    def __init__(self, enable_timing=False, *, device=None):
        self._timing = bool(enable_timing)
        self._handle = None
        self._device = None if device is None else _get_device_index(device, optional=True)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None:
            try:
                _accel.event_destroy(handle)
            except Exception:  # a fork child, interpreter shutdown: nothing to undo
                pass

    @property
    def device_index(self):
        return self._device

    @property
    def event_id(self):
        """The event's handle as an int (accel_event_t); 0 before the first record."""
        return self._handle or 0

    def record(self, stream=None):
        """Records the event on `stream` (None: the current stream)."""
        if stream is None:
            stream = _wrap(_accel.current_stream(-1 if self._device is None else self._device))
        elif not isinstance(stream, Stream):
            raise TypeError(f"record expects an accel.Stream or None, got {stream!r}")
        if self._handle is None:
            self._handle = _accel.event_create(stream.device_index, self._timing)
            self._device = stream.device_index
        _accel.event_record(self._handle, stream.stream_id)

    def wait(self, stream=None):
        """Makes later work on `stream` (None: the current stream) wait for this event."""
        if stream is None:
            stream = _wrap(_accel.current_stream(-1))
        stream.wait_event(self)

    def query(self):
        """True when the last record has completed (or there was none)."""
        return True if self._handle is None else _accel.event_query(self._handle)

    def synchronize(self):
        """Waits (GIL released) for the last record to complete."""
        if self._handle is not None:
            _accel.event_synchronize(self._handle)

    def elapsed_time(self, end_event):
        """Milliseconds between this event's and `end_event`'s completions."""
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time expects an accel.Event, got {end_event!r}")
        if not (self._timing and end_event._timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'")
        if self._handle is None or end_event._handle is None:
            raise ValueError("Both events must be recorded before calculating elapsed time")
        return _accel.event_elapsed_time(self._handle, end_event._handle)

    def __repr__(self):
        return f"accel.Event(enable_timing={self._timing}, event_id={self.event_id:#x})"


_accel.set_stream_tables(_owner_refs, _views, _wrap, _get_device_index)
