"""accel.memory: torch.accelerator.memory's functions over accel's caching
allocator (docs/memory.md). A device argument is an int, a str ("sim:1"),
an accel.device or None (the current device)."""
import collections
import json

from . import _accel
from ._device import _get_device_index

__all__ = [
    "empty_cache", "empty_host_cache", "get_memory_info", "memory_stats", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
    "reset_accumulated_memory_stats", "memory_snapshot", "record_memory_history",
    "host_memory_stats",
]


def _index(device_index):
    return _get_device_index(device_index, optional=True)


def empty_cache():
    """Returns the current device's cached, unused segments to the vendor
    (accel_empty_cache; waits for the streams that last used them, without
    the GIL). torch.accelerator.empty_cache."""
    _accel.empty_cache(-1)


def empty_host_cache():
    """Returns the cached pinned host blocks no queued copy uses
    (accel_empty_host_cache). torch.accelerator.empty_host_cache."""
    _accel.empty_host_cache()


def get_memory_info(device_index=None, /):
    """(free, total) bytes of the device as the backend reports them
    (accel_mem_get_info). torch.accelerator.get_memory_info."""
    return tuple(_accel.mem_get_info(_index(device_index)))


def memory_stats(device_index=None, /):
    """The allocator's statistics of the device as an OrderedDict sorted by
    key, torch's flattened names ("allocated_bytes.all.current", ...,
    "requested_bytes.large_pool.peak", "num_ooms"); never initialises a
    backend (accel_memory_stats_list). torch.accelerator.memory_stats."""
    return collections.OrderedDict(sorted(_accel.memory_stats_list(_index(device_index))))


def host_memory_stats():
    """The pinned host cache's statistics, sorted as memory_stats
    (accel_host_memory_stats_list). torch.cuda.host_memory_stats."""
    return collections.OrderedDict(sorted(_accel.host_memory_stats_list()))


def _stat(device_index, key):
    return memory_stats(device_index).get(key, 0)


def memory_allocated(device_index=None, /):
    """Bytes allocated now ("allocated_bytes.all.current")."""
    return _stat(device_index, "allocated_bytes.all.current")


def max_memory_allocated(device_index=None, /):
    """Peak of memory_allocated since start or reset_peak_memory_stats."""
    return _stat(device_index, "allocated_bytes.all.peak")


def memory_reserved(device_index=None, /):
    """Bytes of vendor memory the allocator holds, allocated or cached."""
    return _stat(device_index, "reserved_bytes.all.current")


def max_memory_reserved(device_index=None, /):
    """Peak of memory_reserved since start or reset_peak_memory_stats."""
    return _stat(device_index, "reserved_bytes.all.peak")


def reset_peak_memory_stats(device_index=None, /):
    """Sets every peak to its current value (accel_reset_peak_memory_stats)."""
    _accel.reset_peak_memory_stats(_index(device_index))


def reset_accumulated_memory_stats(device_index=None, /):
    """Sets the allocated, freed and num_* counters to 0
    (accel_reset_accumulated_memory_stats)."""
    _accel.reset_accumulated_memory_stats(_index(device_index))


def memory_snapshot(device_index=None, /):
    """The allocator's snapshot of the device as a dict: segments with their
    blocks, the statistics and the recorded history (schema in
    docs/memory.md; accel_memory_snapshot). torch.cuda.memory._snapshot."""
    return json.loads(_accel.memory_snapshot(_index(device_index)))


def record_memory_history(max_entries=100000):
    """Keeps the last `max_entries` allocator events of every device for
    memory_snapshot; 0 stops and drops the history (at most 1 << 24:
    accel.InvalidArgumentError above). torch.cuda.memory._record_memory_history."""
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
        raise ValueError(f"record_memory_history: max_entries must be an int >= 0, got {max_entries!r}")
    _accel.record_memory_history(max_entries)
