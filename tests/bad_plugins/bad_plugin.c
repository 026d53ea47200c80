/*
 * One source, many plugins: the loader's hostile inputs, plus a minimal good
 * plugin. tests/bad_plugins/meson.build compiles it once per fault with one
 * of these macros defined:
 *
 *   BAD_NO_ENTRY       exports a function, but not accel_plugin_get_api
 *   BAD_NULL_ENTRY     the entry returns NULL (declines)
 *   BAD_ABI_MAJOR      vtable says ACCEL_PLUGIN_ABI_MAJOR + 1
 *   BAD_SMALL_VTABLE   vtable struct_size < ACCEL_PLUGIN_API_V1_SIZE
 *   BAD_NULL_REQUIRED  a REQUIRED member (stream_query) is NULL
 *   BAD_HALF_GROUP     fills one member of the native-handle group (ABI 1.1)
 *   BAD_CAP_NO_GROUP   declares ACCEL_PLUGIN_CAP_HOST_MEMORY without the
 *                      host-memory members
 *   BAD_INIT_FAIL      init returns ACCEL_ERROR_INTERNAL, "deliberate init failure"
 *   BAD_INIT_UNAVAILABLE init returns ACCEL_ERROR_BACKEND_UNAVAILABLE (vendor
 *                      library "missing")
 *   BAD_REENTER        calls the public API from init, lazy_init and
 *                      default_stream (which the core runs under its locks),
 *                      and fails them unless every nested call answered
 *                      ACCEL_ERROR_REENTRANT naming this plugin; also
 *                      fork()s from each (which must not hang)
 *   PLUGIN_ABI_1_0     not a fault: the good plugin as built for ABI 1.0
 *                      (struct_size ACCEL_PLUGIN_API_V1_SIZE, minor 0), which
 *                      a newer core must still load
 *   (none)             a good, minimal plugin
 *
 * and PLUGIN_NAME set to the backend name (a string literal), PLUGIN_PRIORITY
 * to its priority (default 1).
 *
 * The good plugin implements only the REQUIRED operations (no events, no
 * memory, no host functions, no priorities): its devices are plain counters.
 * Its device count comes from the environment variable ACCEL_TINY_DEVICES
 * (read through host->get_env, default 0), so by default it loads with
 * status no_devices and never competes with a real backend.
 */
/* fork, waitpid, _exit under -std=c99 (BAD_REENTER). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <accel/accel_plugin.h>

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "tiny"
#endif
#ifndef PLUGIN_PRIORITY
#define PLUGIN_PRIORITY 1 /* far below every vendor backend */
#endif

#ifndef BAD_NO_ENTRY

#define TINY_MAX_DEVICES 8
#define TINY_MAX_STREAMS 64

static const accel_host_services_t* g_host;
static int32_t g_devices;

/* Streams are slots in a static table; slot d (< TINY_MAX_DEVICES) is the
 * default stream of device d. All work is synchronous, so streams are always
 * idle. */
struct tiny_stream {
  int used;
  int32_t device;
};
static struct tiny_stream g_streams[TINY_MAX_DEVICES + TINY_MAX_STREAMS];

static void tiny_log(accel_log_level_t level, const char* msg) {
  if (g_host != NULL && g_host->log != NULL) g_host->log(g_host, level, msg);
}

static void tiny_error(accel_status_t status, const char* msg) {
  if (g_host != NULL && g_host->set_error != NULL) g_host->set_error(g_host, status, msg);
}

#ifdef BAD_REENTER
/* The nested call must have failed with ACCEL_ERROR_REENTRANT and a message
 * naming this plugin and the callback; anything else (or a hang) is the bug
 * this plugin exists to catch. */
static accel_status_t reentry_verdict(const char* callback, accel_status_t nested) {
  static char msg[512];
  const char* detail = accel_last_error();
  if (nested == ACCEL_ERROR_REENTRANT && strstr(detail, PLUGIN_NAME) != NULL &&
      strstr(detail, callback) != NULL)
    return ACCEL_SUCCESS;
  snprintf(msg, sizeof msg, "%s: nested accel call answered %s (%s), not ACCEL_ERROR_REENTRANT",
           callback, accel_status_name(nested), detail);
  tiny_error(ACCEL_ERROR_INTERNAL, msg);
  return ACCEL_ERROR_INTERNAL;
}

/* A vendor library may fork a helper while the core holds the lock this
 * callback runs under: the core's fork handlers must not take it again
 * (the process would hang in fork()). The child leaves at once. */
static accel_status_t fork_from(const char* callback) {
  static char msg[256];
  int status = 0;
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return ACCEL_SUCCESS;
  snprintf(msg, sizeof msg, "%s: fork() from the callback failed", callback);
  tiny_error(ACCEL_ERROR_INTERNAL, msg);
  return ACCEL_ERROR_INTERNAL;
}

/* Every call of `calls` must be refused. */
#define REENTRY_CHECK(callback, call)                          \
  do {                                                         \
    accel_status_t verdict_ = reentry_verdict(callback, call); \
    if (verdict_ != ACCEL_SUCCESS) return verdict_;            \
  } while (0)
#endif

static accel_status_t tiny_init(void) {
#if defined(BAD_INIT_FAIL)
  tiny_error(ACCEL_ERROR_INTERNAL, "deliberate init failure");
  return ACCEL_ERROR_INTERNAL;
#elif defined(BAD_INIT_UNAVAILABLE)
  tiny_error(ACCEL_ERROR_BACKEND_UNAVAILABLE,
             PLUGIN_NAME ": deliberately unavailable (no vendor library)");
  return ACCEL_ERROR_BACKEND_UNAVAILABLE;
#else
  const char* env = NULL;
  if (g_host != NULL && g_host->get_env != NULL)
    env = g_host->get_env(g_host, "ACCEL_TINY_DEVICES");
  g_devices = 0;
  if (env != NULL) {
    long n = strtol(env, NULL, 10);
    if (n < 0) n = 0;
    if (n > TINY_MAX_DEVICES) n = TINY_MAX_DEVICES;
    g_devices = (int32_t)n;
  }
  tiny_log(ACCEL_LOG_DEBUG, PLUGIN_NAME ": init done");
#ifdef BAD_REENTER
  {
    accel_stream_t s = NULL;
    accel_backend_info_t info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    (void)accel_is_available(); /* must return, not deadlock */
    REENTRY_CHECK("init", accel_stream_create(0, 0, &s));
    REENTRY_CHECK("init", accel_get_backend_info(0, &info));
    return fork_from("init");
  }
#else
  return ACCEL_SUCCESS;
#endif
#endif
}

#ifdef BAD_REENTER
static accel_status_t tiny_lazy_init(void) {
  accel_stream_t s = NULL;
  REENTRY_CHECK("lazy_init", accel_stream_create(0, 0, &s));
  REENTRY_CHECK("lazy_init", accel_synchronize(0));
  return fork_from("lazy_init");
}
#endif

static accel_status_t tiny_device_count(int32_t* count) {
  *count = g_devices;
  if (g_devices == 0)
    tiny_error(ACCEL_SUCCESS, PLUGIN_NAME ": ACCEL_TINY_DEVICES is unset or 0, so no devices");
  return ACCEL_SUCCESS;
}

static accel_status_t tiny_get_device_properties(int32_t device, accel_device_properties_t* props) {
  static const char name[] = PLUGIN_NAME " test device";
  static const char vendor[] = "accel tests";
  if (props->struct_size >= offsetof(accel_device_properties_t, name) + sizeof props->name)
    memcpy(props->name, name, sizeof name);
  if (props->struct_size >= offsetof(accel_device_properties_t, vendor) + sizeof props->vendor)
    memcpy(props->vendor, vendor, sizeof vendor);
  if (props->struct_size >=
      offsetof(accel_device_properties_t, total_memory) + sizeof props->total_memory)
    props->total_memory = 1u << 20;
  if (props->struct_size >=
      offsetof(accel_device_properties_t, device_index) + sizeof props->device_index)
    props->device_index = device;
  return ACCEL_SUCCESS;
}

static accel_status_t tiny_device_synchronize(int32_t device) {
  (void)device;
  return ACCEL_SUCCESS;
}

static accel_status_t tiny_stream_create(int32_t device, int32_t priority,
                                         accel_plugin_stream_t* stream) {
  int i;
  (void)priority;
  for (i = TINY_MAX_DEVICES; i < TINY_MAX_DEVICES + TINY_MAX_STREAMS; ++i) {
    if (!g_streams[i].used) {
      g_streams[i].used = 1;
      g_streams[i].device = device;
      *stream = &g_streams[i];
      return ACCEL_SUCCESS;
    }
  }
  tiny_error(ACCEL_ERROR_OUT_OF_MEMORY, PLUGIN_NAME ": stream table full");
  return ACCEL_ERROR_OUT_OF_MEMORY;
}

static accel_status_t tiny_stream_destroy(accel_plugin_stream_t stream) {
  ((struct tiny_stream*)stream)->used = 0;
  return ACCEL_SUCCESS;
}

static accel_status_t tiny_default_stream(int32_t device, accel_plugin_stream_t* stream) {
#ifdef BAD_REENTER
  accel_stream_t s = NULL;
  void* p = NULL;
  REENTRY_CHECK("default_stream", accel_current_stream(device, &s));
  REENTRY_CHECK("default_stream", accel_stream_create(device, 0, &s));
  REENTRY_CHECK("default_stream", accel_malloc(device, 16, &p));
  {
    accel_status_t forked = fork_from("default_stream");
    if (forked != ACCEL_SUCCESS) return forked;
  }
#endif
  g_streams[device].used = 1;
  g_streams[device].device = device;
  *stream = &g_streams[device];
  return ACCEL_SUCCESS;
}

#ifndef BAD_NULL_REQUIRED
static accel_status_t tiny_stream_query(accel_plugin_stream_t stream) {
  (void)stream;
  return ACCEL_SUCCESS;
}
#endif

static accel_status_t tiny_stream_synchronize(accel_plugin_stream_t stream) {
  (void)stream;
  return ACCEL_SUCCESS;
}

#ifdef BAD_HALF_GROUP
static accel_status_t tiny_stream_native_handle(accel_plugin_stream_t stream,
                                                accel_native_handle_t* out) {
  (void)stream;
  (void)out;
  return ACCEL_ERROR_INTERNAL;
}
#endif

static const accel_plugin_api_t g_api = {
#ifdef BAD_SMALL_VTABLE
    /* Ends before the memory group: too small for ABI 1.0. */
    offsetof(accel_plugin_api_t, mem_alloc),
#elif defined(PLUGIN_ABI_1_0)
    ACCEL_PLUGIN_API_V1_SIZE,
#else
    sizeof(accel_plugin_api_t),
#endif
#ifdef BAD_ABI_MAJOR
    ACCEL_PLUGIN_ABI_MAJOR + 1u,
#else
    ACCEL_PLUGIN_ABI_MAJOR,
#endif
#ifdef PLUGIN_ABI_1_0
    0u,
#else
    ACCEL_PLUGIN_ABI_MINOR,
#endif
    PLUGIN_NAME,
    PLUGIN_PRIORITY,
#ifdef BAD_CAP_NO_GROUP
    ACCEL_PLUGIN_CAP_FORK_SAFE | ACCEL_PLUGIN_CAP_HOST_MEMORY,
#else
    ACCEL_PLUGIN_CAP_FORK_SAFE,
#endif
    tiny_init,
    tiny_device_count,
#ifdef BAD_REENTER
    tiny_lazy_init,
#else
    NULL, /* lazy_init */
#endif
    tiny_get_device_properties,
    NULL, /* get_current_device */
    NULL, /* set_current_device */
    tiny_device_synchronize,
    NULL, /* stream_priority_range */
    tiny_stream_create,
    tiny_stream_destroy,
    tiny_default_stream,
#ifdef BAD_NULL_REQUIRED
    NULL, /* stream_query: REQUIRED, deliberately missing */
#else
    tiny_stream_query,
#endif
    tiny_stream_synchronize,
    NULL, /* stream_wait_event */
    NULL, /* launch_host_func */
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL, /* events */
    NULL,
    NULL,
    NULL,
    NULL,
    NULL, /* memory */
    NULL, /* runtime_version (ABI 1.1) */
#ifdef BAD_HALF_GROUP
    tiny_stream_native_handle, /* and the rest of its group NULL */
#endif
};

ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(uint32_t abi_major,
                                                                 uint32_t abi_minor,
                                                                 const accel_host_services_t* host);

const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(uint32_t abi_major, uint32_t abi_minor,
                                             const accel_host_services_t* host) {
  (void)abi_minor;
  g_host = host;
#ifdef BAD_NULL_ENTRY
  (void)abi_major;
  (void)&g_api;
  tiny_log(ACCEL_LOG_WARN, PLUGIN_NAME ": declining on purpose (entry returns NULL)");
  return NULL;
#else
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    tiny_log(ACCEL_LOG_WARN, PLUGIN_NAME ": core ABI major differs; declining");
    return NULL;
  }
  return &g_api;
#endif
}

#else /* BAD_NO_ENTRY */

/* A well-formed shared object whose only export is not the entry point (a
 * near miss of the name, as a typo would give). */
ACCEL_PLUGIN_EXPORT int accel_plugin_get_apj(void);
int accel_plugin_get_apj(void) { return 42; }

#endif
