# device_index.py - torch.accelerator's device_index example (PyTorch PR
# #148864), as written there with torch.accelerator replaced by accel.
# Needs two devices; from the source tree:
#   ACCEL_SIM_DEVICES=2 meson devenv -C build -w . /usr/bin/python3 examples/python/device_index.py
import accel

src = 0
dst = 1
accel.set_device_index(src)
with accel.device_index(dst):
    assert accel.current_device_index() == dst
assert accel.current_device_index() == src
print(f"device_index: {accel.current_accelerator()} {dst} then {src}: ok")
