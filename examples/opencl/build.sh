cc -std=c99 -Wall -Wextra -o interop interop.c \
  $(pkg-config --cflags --libs accel OpenCL)
ACCEL_BACKEND=opencl ACCEL_OPENCL_DEVICE_TYPE=all ./interop
