/* hello.c - accel from C: list the devices of the current accelerator, then
 * copy a buffer to the current device and back on a stream of its own. */
#include <accel/accel.h>

#include <stdio.h>
#include <string.h>

/* Every accel call returns a status; on failure accel_last_error() says
 * which backend, which vendor call and what went wrong. */
#define CHECK(call)                                                  \
  do {                                                               \
    accel_status_t st_ = (call);                                     \
    if (st_ != ACCEL_SUCCESS) {                                      \
      fprintf(stderr, "%s: %s: %s\n", #call, accel_status_name(st_), \
              accel_last_error());                                   \
      return 1;                                                      \
    }                                                                \
  } while (0)

int main(void) {
  int32_t d;
  int in[1024], out[1024];
  size_t i;
  void* dev = NULL;
  accel_stream_t stream = NULL;

  if (!accel_is_available()) { /* a normal state, not an error */
    printf("no accelerator: %s\n", accel_selection_reason());
    return 0;
  }
  printf("accelerator: %s, %d device(s)\n", accel_current_accelerator(),
         (int)accel_device_count());
  for (d = 0; d < accel_device_count(); ++d) {
    accel_device_properties_t props;
    memset(&props, 0, sizeof props);
    props.struct_size = sizeof props; /* always set struct_size first */
    CHECK(accel_get_device_properties(d, &props));
    printf("  device %d: %s (%s), %llu MiB\n", (int)d, props.name, props.vendor,
           (unsigned long long)(props.total_memory >> 20));
  }

  for (i = 0; i < 1024; ++i) in[i] = (int)i * 3;
  CHECK(accel_stream_create(-1, 0, &stream)); /* -1: the current device */
  CHECK(accel_malloc(-1, sizeof in, &dev));
  CHECK(accel_memcpy_async(dev, in, sizeof in, ACCEL_MEMCPY_HOST_TO_DEVICE,
                           stream));
  CHECK(accel_memcpy_async(out, dev, sizeof out, ACCEL_MEMCPY_DEVICE_TO_HOST,
                           stream));
  CHECK(accel_stream_synchronize(stream)); /* `out` is valid only after this */
  CHECK(accel_free(dev));
  CHECK(accel_stream_destroy(stream));

  if (memcmp(in, out, sizeof in) != 0) {
    puts("round trip MISMATCH");
    return 1;
  }
  printf("round trip ok on device %d\n", (int)accel_current_device_index());
  return 0;
}
