/*
 * minimal.c - the smallest valid backend: the REQUIRED members of
 * accel_plugin.h and nothing else. Every optional member and group is NULL
 * (lazy_init, stream_priority_range, stream_wait_event, launch_host_func, the
 * events and the memory groups, mem_get_info) and no capability is declared.
 * All work is synchronous, so a stream is always idle.
 *
 * A backend may leave out every optional part: accel-conformance and
 * `accelctl selftest` must pass over this plugin, saying what they did not
 * run and why (tests/plugins/meson.build runs both). It is written in C99
 * against accel_plugin.h alone, as a third-party plugin would be.
 *
 * Built three times (tests/plugins/meson.build):
 *   (no macro)                 backend "minimal"
 *   MINIMAL_INLINE_HOST_FUNCS  backend "inlinehost": also declares
 *                              ACCEL_PLUGIN_CAP_HOST_FUNCTIONS and runs each
 *                              host function inside launch_host_func, before
 *                              returning, which accel_plugin.h forbids. The
 *                              conformance suite must fail it within seconds
 *                              and name the rule.
 *   MINIMAL_ABI_1_0            backend "abi10": the same table as built
 *                              against the ABI 1.0 header (struct_size
 *                              ACCEL_PLUGIN_API_V1_SIZE, minor 0). It must
 *                              load and pass, and every ABI 1.1 call answer
 *                              ACCEL_ERROR_NOT_SUPPORTED saying why.
 *   MINIMAL_ABI_1_1            backend "abi11": the table as built against
 *                              the ABI 1.1 header (struct_size up to the
 *                              modules group, minor 1). Modules and kernels
 *                              must answer ACCEL_ERROR_NOT_SUPPORTED saying
 *                              the plugin predates them.
 *
 * Devices: ACCEL_MINIMAL_DEVICES (read through host->get_env; default 0, so
 * the plugin never competes with a real backend), at most MINIMAL_MAX_DEVICES.
 */
#include <stdlib.h>
#include <string.h>

#include <accel/accel_plugin.h>

#ifdef MINIMAL_INLINE_HOST_FUNCS
#define MINIMAL_NAME "inlinehost"
#define MINIMAL_CAPS ACCEL_PLUGIN_CAP_HOST_FUNCTIONS
#elif defined(MINIMAL_ABI_1_0)
#define MINIMAL_NAME "abi10"
#define MINIMAL_CAPS 0u
#elif defined(MINIMAL_ABI_1_1)
#define MINIMAL_NAME "abi11"
#define MINIMAL_CAPS 0u
#else
#define MINIMAL_NAME "minimal"
#define MINIMAL_CAPS 0u
#endif

#define MINIMAL_MAX_DEVICES 8

static const accel_host_services_t* g_host;
static int32_t g_devices;

/* Streams only remember their device: there is no work to keep. Created
 * streams come from malloc (thread-safe, and distinct handles for the
 * core); default streams are static, one per device. */
struct minimal_stream {
  int32_t device;
};
static struct minimal_stream g_default_streams[MINIMAL_MAX_DEVICES];

static void minimal_error(accel_status_t status, const char* msg) {
  if (g_host != NULL && g_host->set_error != NULL) g_host->set_error(g_host, status, msg);
}

static accel_status_t minimal_device_count(int32_t* count) {
  const char* env = NULL;
  long n = 0;
  if (g_host != NULL && g_host->get_env != NULL)
    env = g_host->get_env(g_host, "ACCEL_MINIMAL_DEVICES");
  if (env != NULL) n = strtol(env, NULL, 10);
  if (n < 0) n = 0;
  if (n > MINIMAL_MAX_DEVICES) n = MINIMAL_MAX_DEVICES;
  g_devices = (int32_t)n;
  *count = g_devices;
  if (g_devices == 0)
    minimal_error(ACCEL_SUCCESS,
                  MINIMAL_NAME ": ACCEL_MINIMAL_DEVICES is unset or 0, so no devices");
  return ACCEL_SUCCESS;
}

/* The core passes its whole accel_device_properties_t, pre-zeroed; a field
 * is written only when that struct holds it (a core older than this header
 * may pass a shorter one). */
#define MINIMAL_HOLDS(props, field) \
  ((props)->struct_size >= offsetof(accel_device_properties_t, field) + sizeof(props)->field)

static accel_status_t minimal_get_device_properties(int32_t device,
                                                    accel_device_properties_t* props) {
  static const char name[] = MINIMAL_NAME " test device";
  static const char vendor[] = "accel tests";
  if (MINIMAL_HOLDS(props, name)) memcpy(props->name, name, sizeof name);
  if (MINIMAL_HOLDS(props, vendor)) memcpy(props->vendor, vendor, sizeof vendor);
  /* No memory group, but a device has some memory to report. */
  if (MINIMAL_HOLDS(props, total_memory)) props->total_memory = (uint64_t)1 << 20;
  if (MINIMAL_HOLDS(props, device_index)) props->device_index = device;
  return ACCEL_SUCCESS;
}

static accel_status_t minimal_device_synchronize(int32_t device) {
  (void)device;
  return ACCEL_SUCCESS;
}

static accel_status_t minimal_stream_create(int32_t device, int32_t priority,
                                            accel_plugin_stream_t* stream) {
  struct minimal_stream* s = (struct minimal_stream*)malloc(sizeof *s);
  (void)priority; /* always 0: there is no stream_priority_range */
  if (s == NULL) {
    minimal_error(ACCEL_ERROR_OUT_OF_MEMORY, MINIMAL_NAME ": malloc of a stream failed");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  s->device = device;
  *stream = s;
  return ACCEL_SUCCESS;
}

static accel_status_t minimal_stream_destroy(accel_plugin_stream_t stream) {
  free(stream);
  return ACCEL_SUCCESS;
}

static accel_status_t minimal_default_stream(int32_t device, accel_plugin_stream_t* stream) {
  g_default_streams[device].device = device;
  *stream = &g_default_streams[device];
  return ACCEL_SUCCESS;
}

/* Nothing is ever queued, so every stream is idle. */
static accel_status_t minimal_stream_query(accel_plugin_stream_t stream) {
  (void)stream;
  return ACCEL_SUCCESS;
}

static accel_status_t minimal_stream_synchronize(accel_plugin_stream_t stream) {
  (void)stream;
  return ACCEL_SUCCESS;
}

#ifdef MINIMAL_INLINE_HOST_FUNCS
/* Wrong on purpose: runs fn on the caller's thread before returning instead
 * of queuing it. A caller that blocks the stream with a host function and
 * then releases it from the same thread never gets control back. */
static accel_status_t minimal_launch_host_func(accel_plugin_stream_t stream, accel_host_fn fn,
                                               void* user_data) {
  (void)stream;
  fn(user_data);
  return ACCEL_SUCCESS;
}
#endif

/* Designated initializers: every member not named here is NULL, including
 * members appended to the vtable after this was written. */
static const accel_plugin_api_t g_api = {
#ifdef MINIMAL_ABI_1_0
    /* As a plugin compiled against the ABI 1.0 header: its table ends at
     * mem_get_info and it says minor 0. */
    .struct_size = ACCEL_PLUGIN_API_V1_SIZE,
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = 0,
#elif defined(MINIMAL_ABI_1_1)
    /* As a plugin compiled against the ABI 1.1 header: its table ends
     * before the modules group of 1.2. */
    .struct_size = offsetof(accel_plugin_api_t, module_formats),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = 1,
#else
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
#endif
    .name = MINIMAL_NAME,
    .priority = 1, /* far below every vendor backend */
    .capabilities = MINIMAL_CAPS,
    .device_count = minimal_device_count,
    .get_device_properties = minimal_get_device_properties,
    .device_synchronize = minimal_device_synchronize,
    .stream_create = minimal_stream_create,
    .stream_destroy = minimal_stream_destroy,
    .default_stream = minimal_default_stream,
    .stream_query = minimal_stream_query,
    .stream_synchronize = minimal_stream_synchronize,
#ifdef MINIMAL_INLINE_HOST_FUNCS
    .launch_host_func = minimal_launch_host_func,
#endif
};

const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(uint32_t abi_major, uint32_t abi_minor,
                                             const accel_host_services_t* host) {
  (void)abi_minor;
  g_host = host;
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    if (host != NULL && host->log != NULL)
      host->log(host, ACCEL_LOG_WARN, MINIMAL_NAME ": the core's ABI major differs; declining");
    return NULL;
  }
  return &g_api;
}
