/*
 * C99 consumer of accel.h and accel_plugin.h, built with
 * -std=c99 -Wall -Wextra -Werror -pedantic: proves the headers are C99-clean
 * and the library is usable from C. Runs against sim with 2 devices
 * (ACCEL_PLUGIN_PATH / ACCEL_SIM_DEVICES / ACCEL_BACKEND from meson test).
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#include <accel/accel.h>
#include <accel/accel_plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compile-time checks, C99 style (no _Static_assert before C11). */
typedef char check_plugin_size[(ACCEL_PLUGIN_API_V1_SIZE <= sizeof(accel_plugin_api_t)) ? 1 : -1];
typedef char check_struct_size_first[(offsetof(accel_backend_info_t, struct_size) == 0) ? 1 : -1];
typedef char check_status_count[(ACCEL_STATUS_COUNT == ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED + 1) ? 1 : -1];

static int g_passed;
static int g_failed;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++g_passed;                                                              \
    } else {                                                                   \
      ++g_failed;                                                              \
      printf("FAILED %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
             accel_last_error());                                              \
    }                                                                          \
  } while (0)

static void set_flag(void* p) { *(volatile int*)p = 1; }

/* accel_module_load_file over sim's kernel object (ACCEL_TEST_SIM_KERNELS, the
 * path meson built it at) and the OpenCL C source (ACCEL_TEST_OPENCL_C), with
 * missing paths before them. */
static void check_module_load_file(void) {
  const char* so = getenv("ACCEL_TEST_SIM_KERNELS");
  const char* cl = getenv("ACCEL_TEST_OPENCL_C");
  char missing[4096];
  char missing2[4096];
  const char* paths[2];
  accel_module_t m = NULL;
  accel_kernel_t k = NULL;
  accel_module_format_t f = ACCEL_MODULE_FORMAT_FORCE_INT32;
  CHECK(so != NULL && cl != NULL);
  if (so == NULL || cl == NULL || strlen(so) + 16 > sizeof missing) return;
  sprintf(missing, "%s.missing", so);
  sprintf(missing2, "%s.missing2", so);

  /* The missing file is skipped; the sim object is loaded and says so. */
  paths[0] = missing;
  paths[1] = so;
  CHECK(accel_module_load_file(-1, paths, 2, NULL, &m) == ACCEL_SUCCESS && m != NULL);
  CHECK(accel_module_format(m, &f) == ACCEL_SUCCESS && f == ACCEL_MODULE_FORMAT_SIM_HOST);
  CHECK(accel_module_get_kernel(m, "vector_add", &k) == ACCEL_SUCCESS && k != NULL);
  CHECK(accel_module_format(m, NULL) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_module_unload(m) == ACCEL_SUCCESS);
  f = ACCEL_MODULE_FORMAT_FORCE_INT32;
  CHECK(accel_module_format(m, &f) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(f == ACCEL_MODULE_FORMAT_FORCE_INT32);
  CHECK(accel_module_format(NULL, &f) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(f == ACCEL_MODULE_FORMAT_FORCE_INT32);

  /* Nothing readable: the error names both paths and the reason. */
  m = NULL;
  paths[0] = missing;
  paths[1] = missing2;
  CHECK(accel_module_load_file(-1, paths, 2, NULL, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  CHECK(strstr(accel_last_error(), missing) != NULL);
  CHECK(strstr(accel_last_error(), missing2) != NULL);
  CHECK(strstr(accel_last_error(), strerror(ENOENT)) != NULL);

  /* A file sim does not take: OpenCL C source. */
  paths[0] = cl;
  CHECK(accel_module_load_file(-1, paths, 1, NULL, &m) == ACCEL_ERROR_NOT_SUPPORTED);
  CHECK(m == NULL);
  CHECK(strstr(accel_last_error(), cl) != NULL);
  CHECK(strstr(accel_last_error(), "opencl_c") != NULL);

  /* Bad arguments. */
  paths[0] = so;
  paths[1] = NULL;
  CHECK(accel_module_load_file(-1, paths, 1, NULL, NULL) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_module_load_file(-1, NULL, 1, NULL, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_module_load_file(-1, paths, 0, NULL, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_module_load_file(-1, paths, 2, NULL, &m) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_module_load_file(7, paths, 1, NULL, &m) == ACCEL_ERROR_INVALID_DEVICE);
  CHECK(m == NULL);
}

int main(void) {
  int32_t prev = -1;
  int32_t dev = -1;
  int32_t least = 0;
  int32_t greatest = 0;
  accel_stream_t stream = NULL;
  accel_stream_t def = NULL;
  accel_event_t ev = NULL;
  void* dptr = NULL;
  unsigned char in[256];
  unsigned char out[256];
  volatile int flag = 0;
  size_t i;
  size_t nb;
  accel_memory_stats_t stats;
  accel_device_properties_t props;
  accel_backend_info_t info;
  int found_sim = 0;
  size_t sim_index = 0;

  CHECK(accel_is_available() == 1);
  CHECK(accel_current_accelerator() != NULL && strcmp(accel_current_accelerator(), "sim") == 0);
  CHECK(accel_device_count() == 2);
  CHECK(strlen(accel_version()) > 0);
  CHECK(strcmp(accel_status_name(ACCEL_ERROR_INVALID_DEVICE), "ACCEL_ERROR_INVALID_DEVICE") == 0);
  CHECK(strlen(accel_status_message(ACCEL_SUCCESS)) > 0);
  /* C may pass any int as an enum: an unknown one, negative too, has a name. */
  CHECK(strcmp(accel_status_name((accel_status_t)-1), "ACCEL_STATUS_UNKNOWN") == 0);
  CHECK(strcmp(accel_status_message((accel_status_t)-1), "unknown status") == 0);
  CHECK(strcmp(accel_status_name((accel_status_t)ACCEL_STATUS_COUNT), "ACCEL_STATUS_UNKNOWN") == 0);

  /* Device index semantics. */
  CHECK(accel_current_device_index() == 0);
  CHECK(accel_set_device_index(1) == ACCEL_SUCCESS);
  CHECK(accel_current_device_index() == 1);
  CHECK(accel_set_device_index(-1) == ACCEL_SUCCESS);
  CHECK(accel_current_device_index() == 1);
  CHECK(accel_set_device_index(2) == ACCEL_ERROR_INVALID_DEVICE);
  CHECK(strlen(accel_last_error()) > 0);
  CHECK(accel_exchange_device(0, &prev) == ACCEL_SUCCESS && prev == 1);
  CHECK(accel_maybe_exchange_device(1, &prev) == ACCEL_SUCCESS && prev == 0);
  CHECK(accel_exchange_device(-1, &prev) == ACCEL_SUCCESS && prev == 1);
  CHECK(accel_set_device_index(0) == ACCEL_SUCCESS);

  /* Streams, host functions, events. */
  CHECK(accel_current_stream(-1, &def) == ACCEL_SUCCESS && def != NULL);
  CHECK(accel_stream_destroy(def) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_stream_priority_range(1, &least, &greatest) == ACCEL_SUCCESS);
  CHECK(greatest <= 0 && least >= 0);
  CHECK(accel_stream_create(1, 0, &stream) == ACCEL_SUCCESS && stream != NULL);
  CHECK(accel_stream_device(stream, &dev) == ACCEL_SUCCESS && dev == 1);
  CHECK(accel_set_stream(stream) == ACCEL_SUCCESS);
  CHECK(accel_current_device_index() == 1);
  CHECK(accel_event_create(1, ACCEL_EVENT_ENABLE_TIMING, &ev) == ACCEL_SUCCESS);
  CHECK(accel_event_device(ev, &dev) == ACCEL_SUCCESS && dev == 1);
  CHECK(accel_launch_host_func(stream, set_flag, (void*)&flag) == ACCEL_SUCCESS);

  /* Memory round trip through the current stream (NULL). */
  for (i = 0; i < sizeof in; ++i) in[i] = (unsigned char)(i * 7u + 3u);
  memset(out, 0, sizeof out);
  CHECK(accel_malloc(-1, sizeof in, &dptr) == ACCEL_SUCCESS && dptr != NULL);
  CHECK(accel_memcpy_async(dptr, in, sizeof in, ACCEL_MEMCPY_HOST_TO_DEVICE, NULL) ==
        ACCEL_SUCCESS);
  CHECK(accel_memset_async(dptr, 0x11, 8, NULL) == ACCEL_SUCCESS);
  CHECK(accel_memcpy_async(out, dptr, sizeof out, ACCEL_MEMCPY_DEVICE_TO_HOST, NULL) ==
        ACCEL_SUCCESS);
  CHECK(accel_event_record(ev, NULL) == ACCEL_SUCCESS);
  CHECK(accel_event_synchronize(ev) == ACCEL_SUCCESS);
  CHECK(accel_event_query(ev) == ACCEL_SUCCESS);
  CHECK(accel_stream_query(stream) == ACCEL_SUCCESS);
  CHECK(flag == 1);
  CHECK(out[0] == 0x11 && out[7] == 0x11);
  CHECK(memcmp(out + 8, in + 8, sizeof in - 8) == 0);

  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  CHECK(accel_memory_stats(1, &stats) == ACCEL_SUCCESS);
  CHECK(stats.allocated_bytes >= sizeof in);
  CHECK(accel_free(dptr) == ACCEL_SUCCESS);
  CHECK(accel_free(dptr) == ACCEL_ERROR_INVALID_ARGUMENT);
  CHECK(accel_free(NULL) == ACCEL_SUCCESS);
  CHECK(accel_reset_peak_memory_stats(1) == ACCEL_SUCCESS);
  CHECK(accel_synchronize(-1) == ACCEL_SUCCESS);

  memset(&props, 0, sizeof props);
  props.struct_size = sizeof props;
  CHECK(accel_get_device_properties(1, &props) == ACCEL_SUCCESS);
  CHECK(props.device_index == 1 && strlen(props.name) > 0);

  CHECK(accel_set_stream(def) == ACCEL_SUCCESS);
  CHECK(accel_current_device_index() == 0);
  CHECK(accel_event_destroy(ev) == ACCEL_SUCCESS);
  CHECK(accel_stream_destroy(stream) == ACCEL_SUCCESS);
  CHECK(accel_stream_query(stream) == ACCEL_ERROR_INVALID_ARGUMENT);

  /* Introspection. */
  nb = accel_backend_count();
  CHECK(nb >= 1);
  for (i = 0; i < nb; ++i) {
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(accel_get_backend_info(i, &info) == ACCEL_SUCCESS);
    if (info.name != NULL && strcmp(info.name, "sim") == 0 && info.is_current == 1 &&
        info.status == ACCEL_BACKEND_AVAILABLE && info.device_count == 2) {
      found_sim = 1;
      sim_index = i;
      CHECK(info.runtime_version != NULL && strncmp(info.runtime_version, "accel sim ", 10) == 0);
    }
  }
  CHECK(found_sim);
  /* A caller whose struct ends before runtime_version (built against an
   * older accel.h), or inside it, never gets a byte of it. */
  {
    static const char canary[] = "untouched";
    size_t sizes[2];
    size_t k;
    sizes[0] = offsetof(accel_backend_info_t, runtime_version);
    sizes[1] = offsetof(accel_backend_info_t, runtime_version) + sizeof(const char*) / 2;
    for (k = 0; k < 2; ++k) {
      memset(&info, 0, sizeof info);
      info.runtime_version = canary;
      info.struct_size = sizes[k];
      CHECK(accel_get_backend_info(sim_index, &info) == ACCEL_SUCCESS);
      CHECK(info.runtime_version == canary);
      CHECK(info.is_current == 1); /* the members before it are filled */
    }
  }
  CHECK(accel_get_backend_info(nb, &info) == ACCEL_ERROR_OUT_OF_RANGE);
  CHECK(strcmp(accel_backend_status_name(ACCEL_BACKEND_REJECTED), "rejected") == 0);

  check_module_load_file();

  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
