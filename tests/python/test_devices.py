"""torch.accelerator's device functions: names, signatures, errors."""
import inspect
import warnings

import pytest

from conftest import BACKEND, DEVICES


def test_availability(accel):
    assert accel.is_available()
    acc = accel.current_accelerator()
    assert isinstance(acc, accel.device)
    assert acc.type == BACKEND and acc.index is None
    assert accel.current_accelerator(check_available=True) == acc
    assert accel.device_count() >= 1
    if DEVICES:
        assert accel.device_count() == DEVICES
    assert BACKEND in accel.selection_reason()


def test_device_objects(accel):
    d = accel.device(f"{BACKEND}:1")
    assert (d.type, d.index) == (BACKEND, 1)
    assert str(d) == f"{BACKEND}:1"
    assert repr(d) == f"device(type='{BACKEND}', index=1)"
    assert d == accel.device(BACKEND, 1) and hash(d) == hash(accel.device(BACKEND, 1))
    assert accel.device(BACKEND) != d
    assert (d == 1) is False
    for bad in [f"{BACKEND}:x", ":1", f"{BACKEND}:-1"]:
        with pytest.raises(ValueError):
            accel.device(bad)
    with pytest.raises(TypeError):
        accel.device(3)


def test_positional_only(accel):
    for name in ["set_device_index", "current_stream", "synchronize", "get_device_capability"]:
        params = list(inspect.signature(getattr(accel, name)).parameters.values())
        assert params[0].kind is inspect.Parameter.POSITIONAL_ONLY, name
    with pytest.raises(TypeError):
        accel.set_device_index(device=0)


def test_set_device_index_forms(two_devices):
    accel = two_devices
    accel.set_device_index(1)
    assert accel.current_device_index() == 1
    accel.set_device_index(f"{BACKEND}:0")
    assert accel.current_device_index() == 0
    accel.set_device_index(accel.device(BACKEND, 1))
    assert accel.current_device_index() == 1
    accel.set_device_index(-1)  # negative: no-op
    assert accel.current_device_index() == 1


def test_hot_calls_device_errors(accel):
    """current_stream and device_index (the extension's fast paths) give the
    same errors as the rest: other types, out of range, beyond int32."""
    index = accel.current_device_index()
    for call in (accel.current_stream, lambda d: accel.device_index(d).__enter__()):
        with pytest.raises(ValueError, match="doesn't match the current accelerator"):
            call("cpu")
        with pytest.raises(TypeError):
            call(True)
        with pytest.raises(accel.InvalidArgumentError):
            call(accel.device_count())
        with pytest.raises(OverflowError):
            call(1 << 40)
        with pytest.raises(OverflowError):
            call(f"{BACKEND}:{1 << 40}")
    assert accel.current_device_index() == index


def test_set_device_index_errors(accel):
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        accel.set_device_index("cpu")
    with pytest.raises(ValueError, match="doesn't match the current accelerator"):
        accel.set_device_index(accel.device("cpu", 0))
    with pytest.raises(ValueError, match="specified index"):
        accel.set_device_index(BACKEND)
    n = accel.device_count()
    with pytest.raises(accel.Error) as info:
        accel.set_device_index(n)
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, RuntimeError)
    assert e.status == "INVALID_DEVICE"
    assert str(n) in e.detail and e.detail in str(e)
    assert accel.current_device_index() == 0  # nothing changed
    with pytest.raises(TypeError):
        accel.set_device_index(1.5)


def test_deprecated_idx(accel):
    with pytest.warns(FutureWarning):
        assert accel.current_device_idx() == 0
    with pytest.warns(FutureWarning):
        accel.set_device_idx(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accel.current_device_index()


def test_device_index_context(two_devices):
    accel = two_devices
    src, dst = 0, 1
    accel.set_device_index(src)
    with accel.device_index(dst):
        assert accel.current_device_index() == dst
    assert accel.current_device_index() == src
    with accel.device_index(f"{BACKEND}:1"):
        assert accel.current_device_index() == 1
    with accel.device_index(None):
        assert accel.current_device_index() == src
    with pytest.raises(KeyError):
        with accel.device_index(dst):
            raise KeyError("inside")
    assert accel.current_device_index() == src
    with accel.device_index(dst):
        with accel.device_index(src):
            assert accel.current_device_index() == src
        assert accel.current_device_index() == dst


def test_synchronize_forms(accel):
    accel.synchronize()
    accel.synchronize(0)
    accel.synchronize(f"{BACKEND}:0")
    accel.synchronize(accel.device(BACKEND, 0))
    with pytest.raises(ValueError, match="doesn't match"):
        accel.synchronize("cpu:0")


def test_device_capability(accel):
    cap = accel.get_device_capability()
    assert set(cap) == {"supported_dtypes"}
    dtypes = cap["supported_dtypes"]
    assert isinstance(dtypes, set)
    assert {"float32", "int32", "uint8", "bool"} <= dtypes
    assert dtypes <= {"uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
                      "complex32", "complex64", "complex128", "bool", "bfloat16"}
    if BACKEND == "sim":
        assert "bfloat16" in dtypes and "float64" in dtypes
    assert accel.get_device_capability(0) == cap


def test_example_device_index(two_devices, tmp_path):
    import os
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                           "device_index.py")
    out = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"device_index: {BACKEND} 1 then 0: ok" in out.stdout
