#include "runtime.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "common.hpp"

namespace accel_hip {

const char* const kRuntimeSonames[3] = {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};

namespace {

Runtime g_runtime;
std::atomic<pid_t> g_initialised_in{0};
std::string g_init_reason;

std::string dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

std::string link_map_file(void* handle) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr)
    return {};
  return map->l_name;
}

// Resolves every entry point; returns the first required one missing, or "".
std::string resolve(Runtime& rt) {
#define ACCEL_HIP_RESOLVE(fn) \
  rt.fn = reinterpret_cast<decltype(rt.fn)>(dlsym(rt.handle, #fn)); \
  if (rt.fn == nullptr) return #fn;
  ACCEL_HIP_REQUIRED_FUNCTIONS(ACCEL_HIP_RESOLVE)
#undef ACCEL_HIP_RESOLVE
  rt.hipMalloc = reinterpret_cast<decltype(rt.hipMalloc)>(dlsym(rt.handle, "hipMalloc"));
  if (rt.hipMalloc == nullptr) return "hipMalloc";
#define ACCEL_HIP_RESOLVE_OPTIONAL(fn) \
  rt.fn = reinterpret_cast<decltype(rt.fn)>(dlsym(rt.handle, #fn));
  ACCEL_HIP_OPTIONAL_FUNCTIONS(ACCEL_HIP_RESOLVE_OPTIONAL)
#undef ACCEL_HIP_RESOLVE_OPTIONAL
  return {};
}

// Built-in names for a runtime whose hipGetErrorName is unusable.
const char* builtin_name(hipError_t code) {
  switch (code) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorNotInitialized: return "hipErrorNotInitialized";
    case hipErrorInvalidDevicePointer: return "hipErrorInvalidDevicePointer";
    case hipErrorInvalidMemcpyDirection: return "hipErrorInvalidMemcpyDirection";
    case hipErrorInsufficientDriver: return "hipErrorInsufficientDriver";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotReady: return "hipErrorNotReady";
    default: return "hipErrorUnknown";
  }
}

}  // namespace

Runtime& runtime() { return g_runtime; }

accel_status_t load_runtime() {
  Runtime& rt = g_runtime;
  if (rt.handle != nullptr) return ACCEL_SUCCESS;
  std::vector<std::string> tried;
  std::string last_error;
  const char* forced = config_env("ACCEL_HIP_RUNTIME");
  if (forced != nullptr && *forced != '\0') {
    if (forced[0] != '/') {
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  format("ACCEL_HIP_RUNTIME='%s' is not an absolute path; refused (it must name "
                         "the HIP runtime library file, e.g. /opt/rocm/lib/libamdhip64.so.6)",
                         forced));
    }
    rt.explicit_path = true;
    dlerror();
    rt.handle = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
    if (rt.handle == nullptr) {
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  format("HIP runtime not found: dlopen(ACCEL_HIP_RUNTIME=%s) failed: %s", forced,
                         dl_error().c_str()));
    }
    rt.name = forced;
  } else {
    for (const char* soname : kRuntimeSonames) {
      dlerror();
      rt.handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
      if (rt.handle != nullptr) {
        rt.name = soname;
        break;
      }
      tried.push_back(soname);
      last_error = dl_error();
    }
    if (rt.handle == nullptr) {
      std::string list;
      for (const auto& s : tried) list += (list.empty() ? "" : ", ") + s;
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  format("HIP runtime not found: tried %s (last dlopen error: %s); install ROCm's "
                         "HIP runtime or set ACCEL_HIP_RUNTIME=/abs/path/libamdhip64.so",
                         list.c_str(), last_error.c_str()));
    }
  }
  rt.file = link_map_file(rt.handle);
  if (std::string missing = resolve(rt); !missing.empty()) {
    std::string label = runtime_label();
    // Plugins are never unloaded; neither is a runtime we cannot use (it may
    // have run constructors; unloading HIP is not supported by ROCm).
    rt.handle = nullptr;
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                format("HIP runtime %s lacks the entry point %s (too old or not a HIP runtime)",
                       label.c_str(), missing.c_str()));
  }
  if (!tried.empty()) {
    std::string list;
    for (const auto& s : tried) list += (list.empty() ? "" : ", ") + s;
    log(ACCEL_LOG_DEBUG, format("not found: %s", list.c_str()));
  }
  log(ACCEL_LOG_DEBUG, "loaded HIP runtime " + runtime_label());
  return ACCEL_SUCCESS;
}

std::string runtime_label() {
  const Runtime& rt = g_runtime;
  if (rt.file.empty() || rt.file == rt.name) return rt.name;
  return rt.name + " (" + rt.file + ")";
}

void note_runtime_initialised() {
  pid_t expected = 0;
  g_initialised_in.compare_exchange_strong(expected, getpid());
}

pid_t runtime_initialised_in() { return g_initialised_in.load(); }

void set_init_reason(const std::string& why) {
  if (g_init_reason.empty()) g_init_reason = why;
}

const std::string& init_reason() { return g_init_reason; }

std::string error_text(hipError_t code) {
  const Runtime& rt = g_runtime;
  const char* name = rt.hipGetErrorName != nullptr ? rt.hipGetErrorName(code) : nullptr;
  const char* text = rt.hipGetErrorString != nullptr ? rt.hipGetErrorString(code) : nullptr;
  if (name == nullptr || *name == '\0') name = builtin_name(code);
  std::string out = format("%s (%d)", name, static_cast<int>(code));
  if (text != nullptr && *text != '\0' && std::string(text) != name) {
    out += ": ";
    out += text;
  }
  return out;
}

accel_status_t to_status(hipError_t code) {
  switch (code) {
    case hipSuccess: return ACCEL_SUCCESS;
    case hipErrorOutOfMemory: return ACCEL_ERROR_OUT_OF_MEMORY;
    case hipErrorNotReady: return ACCEL_ERROR_NOT_READY;
    default: return ACCEL_ERROR_BACKEND_FAILURE;
  }
}

accel_status_t hip_fail(const char* call, hipError_t code, const std::string& context) {
  accel_status_t st = to_status(code);
  try {
    std::string msg = std::string(call) + " failed: " + error_text(code);
    if (!context.empty()) msg += " " + context;
    return fail(st, msg);
  } catch (...) {
    return fail(st, call);
  }
}

}  // namespace accel_hip
