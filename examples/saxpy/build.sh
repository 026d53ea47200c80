# Built by Meson with the rest of accel (examples/saxpy/meson.build), since
# it embeds the kernel images the build made in kernels/; run it with
#   ACCEL_OPENCL_DEVICE_TYPE=all meson devenv -C build accel-saxpy
#   ACCEL_BACKEND=sim meson devenv -C build accel-saxpy-cxx
meson compile -C build accel-saxpy accel-saxpy-cxx
