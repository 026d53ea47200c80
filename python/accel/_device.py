"""accel.device and the device argument rules of torch.accelerator.

A device argument is an int (an index; negative means "no device" where
torch allows None), a str ("sim", "sim:1") or an accel.device, as torch's
torch.accelerator._utils._get_device_index takes them.
"""
from . import _accel

__all__ = ["device"]


class device:
    """A device of an accelerator: ``type`` is the backend name ("sim",
    "cuda", "opencl", ...), ``index`` its device index or None (the current
    one). ``device("sim:1")``, ``device("sim", 1)`` and ``device("sim")``
    work as ``torch.device`` does."""

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(device, index): give the index in the device")
            self._type, self._index = type._type, type._index
            return
        if not isinstance(type, str):
            raise TypeError(f"device() expects a str or an accel.device, got {type!r}")
        name, sep, rest = type.partition(":")
        if not name or (sep and index is not None):
            raise ValueError(f"Invalid device string: '{type}'")
        if sep:
            if not rest.isdigit():
                raise ValueError(f"Invalid device string: '{type}'")
            index = int(rest)
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int):
                raise TypeError(f"device index must be an int, got {index!r}")
            if index < 0:
                raise ValueError(f"Device index must not be negative, got {index}")
        self._type, self._index = name, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self):
        return hash((self._type, self._index))


def _current_accelerator_or_raise():
    name = _accel.current_accelerator()
    if name is None:
        raise RuntimeError(f"Accelerator expected: {_accel.selection_reason()}")
    return name


def _get_device_index(dev, optional=False):
    """The index `dev` names (torch's _get_device_index): an int as it is;
    a str or device of another type than the current accelerator raises
    ValueError; a device without an index is the current device when
    `optional`, else a ValueError."""
    if isinstance(dev, bool):
        raise TypeError(f"a device must be an int, a str or an accel.device, got {dev!r}")
    if isinstance(dev, int):
        return dev
    if isinstance(dev, str):
        dev = device(dev)
    index = None
    if isinstance(dev, device):
        acc = _current_accelerator_or_raise()
        if dev.type != acc:
            raise ValueError(f"{dev.type} doesn't match the current accelerator {acc}.")
        index = dev.index
    elif dev is not None:
        raise TypeError(f"a device must be an int, a str or an accel.device, got {dev!r}")
    if index is None:
        if not optional:
            raise ValueError(
                f"Expected a accel.device with a specified index or an integer, but got:{dev}")
        return _accel.current_device_index()
    return index
