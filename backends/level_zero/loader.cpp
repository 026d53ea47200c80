// The Level Zero loader (libze_loader.so.1), reached through dlopen so that a
// machine without it lists the backend as `unavailable` instead of failing to
// load the plugin. ACCEL_ZE_LOADER (read through the host's secure_getenv)
// names another file, for tests and for side-by-side loader installs.
#include "l0.hpp"

#include <dlfcn.h>

namespace accel_ze {

Loader ze;

namespace {

constexpr const char* kLoaderName = "libze_loader.so.1";

}  // namespace

accel_status_t op_init() {
  return guarded("init", [&]() -> accel_status_t {
    const char* override_path = host_env("ACCEL_ZE_LOADER");
    std::string path = override_path != nullptr && *override_path != '\0' ? override_path
                                                                           : kLoaderName;
    // RTLD_LOCAL: the loader's symbols stay private to this plugin.
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* err = dlerror();
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  "the Level Zero loader %s could not be loaded (%s); install libze1 (Debian/"
                  "Ubuntu) or the oneAPI Level Zero loader",
                  path.c_str(), err != nullptr ? err : "unknown dlopen error");
    }
    Loader l;
    l.handle = h;
    l.path = path;
    std::string missing;
#define ACCEL_ZE_RESOLVE(fn)                                          \
  l.fn = reinterpret_cast<decltype(l.fn)>(dlsym(h, #fn));             \
  if (l.fn == nullptr) missing += missing.empty() ? #fn : ", " #fn;
    ACCEL_ZE_REQUIRED(ACCEL_ZE_RESOLVE)
#undef ACCEL_ZE_RESOLVE
    if (!missing.empty()) {
      // Keep the handle: plugins never unload what they loaded (the loader's
      // own static destructors would run twice with some glibc versions).
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  "the Level Zero loader %s lacks required entry points: %s", path.c_str(),
                  missing.c_str());
    }
#define ACCEL_ZE_RESOLVE_OPT(fn) l.fn = reinterpret_cast<decltype(l.fn)>(dlsym(h, #fn));
    ACCEL_ZE_OPTIONAL(ACCEL_ZE_RESOLVE_OPT)
#undef ACCEL_ZE_RESOLVE_OPT
    l.zeInitDrivers = reinterpret_cast<PfnInitDrivers>(dlsym(h, "zeInitDrivers"));
    l.zeDriverGetLastErrorDescription =
        reinterpret_cast<PfnGetLastErrorDescription>(dlsym(h, "zeDriverGetLastErrorDescription"));
    l.zeCommandListHostSynchronize =
        reinterpret_cast<PfnCommandListHostSynchronize>(dlsym(h, "zeCommandListHostSynchronize"));
    ze = l;
    log_msg(ACCEL_LOG_DEBUG,
            "loaded %s (zeInitDrivers %s, zeDriverGetLastErrorDescription %s, "
            "zeCommandListHostSynchronize %s)",
            path.c_str(), l.zeInitDrivers ? "present" : "absent",
            l.zeDriverGetLastErrorDescription ? "present" : "absent",
            l.zeCommandListHostSynchronize ? "present" : "absent");
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel_ze
