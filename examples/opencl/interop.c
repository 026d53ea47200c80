/* interop.c - clEnqueueSVMMemFill on the OpenCL queue behind an accel
 * stream, between two accel copies: one queue, so all three run in order. */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <accel/accel.h>
#include <stdio.h>
#include <string.h>

#define CHECK(c) \
  if ((c) != ACCEL_SUCCESS) return printf("%s: %s\n", #c, accel_last_error())

int main(void) {
  unsigned char in[4096], out[4096], pattern = 0xAB;
  accel_native_handle_t q;
  accel_stream_t stream;
  void* dev;
  size_t i;

  for (i = 0; i < sizeof in; ++i) in[i] = (unsigned char)i;
  memset(&q, 0, sizeof q);
  q.struct_size = sizeof q; /* always set struct_size first */
  CHECK(accel_stream_create(-1, 0, &stream));
  CHECK(accel_stream_native_handle(stream, &q));
  if (q.type != ACCEL_NATIVE_OPENCL) return printf("not OpenCL\n");
  CHECK(accel_malloc(-1, sizeof in, &dev)); /* an SVM pointer on OpenCL */
  CHECK(accel_memcpy_async(dev, in, 4096, ACCEL_MEMCPY_HOST_TO_DEVICE, stream));
  /* Bytes [1024, 2048) := 0xAB, through OpenCL, on accel's queue. */
  if (clEnqueueSVMMemFill((cl_command_queue)q.handle, (char*)dev + 1024,
                          &pattern, 1, 1024, 0, NULL, NULL) != CL_SUCCESS)
    return printf("clEnqueueSVMMemFill failed\n");
  CHECK(
      accel_memcpy_async(out, dev, 4096, ACCEL_MEMCPY_DEVICE_TO_HOST, stream));
  CHECK(accel_stream_synchronize(stream));
  for (i = 0; i < sizeof out; ++i)
    if (out[i] != (i >= 1024 && i < 2048 ? pattern : in[i]))
      return printf("MISMATCH at byte %u\n", (unsigned)i);
  printf("OpenCL fill ordered between accel copies\n");
  CHECK(accel_free(dev));
  return accel_stream_destroy(stream);
}
