#include "driver.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "common.hpp"
#include "errors.hpp"

#define ACCEL_CUDA_STR2(x) #x
#define ACCEL_CUDA_STR(x) ACCEL_CUDA_STR2(x)

namespace accel_cuda {

namespace {

Driver g_driver;

// cuGetProcAddress as CUDA 12.0 declares it (exported as cuGetProcAddress_v2).
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

const char* dl_error() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

// One entry point: cuGetProcAddress(base name, header version) first, then
// dlsym of the versioned name cuda.h maps it to, then the compat name.
void* resolve(GetProcAddressFn gpa, const char* base, const char* versioned, const char* compat,
              bool& via_gpa) {
  if (gpa != nullptr) {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found{};
    if (gpa(base, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) == CUDA_SUCCESS &&
        fn != nullptr) {
      via_gpa = true;
      return fn;
    }
  }
  via_gpa = false;
  void* fn = dlsym(g_driver.handle, versioned);
  if (fn == nullptr && compat != nullptr) fn = dlsym(g_driver.handle, compat);
  return fn;
}

}  // namespace

Driver& driver() { return g_driver; }

std::string version_text(int version) {
  return fmt::format("{}.{} ({})", version / 1000, (version % 1000) / 10, version);
}

accel_status_t load_driver() {
  Driver& d = g_driver;
  const char* configured = config_env("ACCEL_CUDA_DRIVER");
  if (configured != nullptr && *configured != '\0') {
    if (configured[0] != '/') {
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  fmt::format("ACCEL_CUDA_DRIVER='{}' is not an absolute path; refused (name the "
                              "driver library by its full path, e.g. /usr/lib/x86_64-linux-gnu/"
                              "libcuda.so.1)",
                              configured));
    }
    d.path = configured;
    d.explicit_path = true;
  } else {
    d.path = "libcuda.so.1";
  }
  d.handle = dlopen(d.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (d.handle == nullptr) {
    const char* err = dl_error();
    if (d.explicit_path) {
      return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                  fmt::format("cannot load the CUDA driver library '{}' named by "
                              "ACCEL_CUDA_DRIVER (instead of libcuda.so.1): {}",
                              d.path, err));
    }
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("cannot load the CUDA driver library libcuda.so.1 (is the NVIDIA "
                            "driver installed?): {}",
                            err));
  }

  // The version query needs no cuInit and tells the toolkit's stub apart.
  using VersionFn = CUresult (*)(int*);
  auto get_version = reinterpret_cast<VersionFn>(dlsym(d.handle, "cuDriverGetVersion"));
  if (get_version == nullptr) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("'{}' is not a CUDA driver library: it has no cuDriverGetVersion",
                            d.path));
  }
  int version = 0;
  CUresult rc = get_version(&version);
  if (rc == CUDA_ERROR_STUB_LIBRARY) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("'{}' is the CUDA toolkit's stub library "
                            "(cuDriverGetVersion returned CUDA_ERROR_STUB_LIBRARY): no NVIDIA "
                            "driver is installed",
                            d.path));
  }
  if (rc != CUDA_SUCCESS) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("cuDriverGetVersion failed on '{}': error {}", d.path,
                            static_cast<int>(rc)));
  }
  d.version = version;
  if (version < kMinDriverVersion) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("the CUDA driver '{}' supports CUDA {}, older than this plugin "
                            "needs: CUDA {} or newer (update the NVIDIA driver)",
                            d.path, version_text(version), version_text(kMinDriverVersion)));
  }

  // CUDA 12.0+ exports cuGetProcAddress_v2 (flags + symbol status); 11.x
  // drivers are served by dlsym of the versioned names.
  auto gpa = reinterpret_cast<GetProcAddressFn>(dlsym(d.handle, "cuGetProcAddress_v2"));
  int from_gpa = 0;
  std::string missing;
#define ACCEL_CUDA_RESOLVE(name, compat)                                                   \
  {                                                                                        \
    bool via = false;                                                                      \
    d.name = reinterpret_cast<decltype(d.name)>(                                           \
        resolve(gpa, #name, ACCEL_CUDA_STR(name), compat, via));                           \
    from_gpa += via;                                                                       \
    if (d.name == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(#name);  \
  }
  ACCEL_CUDA_DRIVER_FUNCTIONS(ACCEL_CUDA_RESOLVE)
#undef ACCEL_CUDA_RESOLVE
  if (!missing.empty()) {
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                fmt::format("the CUDA driver '{}' (CUDA {}) lacks entry points this plugin "
                            "needs: {}",
                            d.path, version_text(version), missing));
  }
  d.proc_address = from_gpa > 0;
  log(ACCEL_LOG_DEBUG,
      fmt::format("loaded CUDA driver '{}' (CUDA {}); {} entry points through {}", d.path,
                  version_text(version), from_gpa,
                  gpa != nullptr ? "cuGetProcAddress (rest dlsym)" : "dlsym"));
  return ACCEL_SUCCESS;
}

}  // namespace accel_cuda
