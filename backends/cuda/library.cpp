// Loading the CUDA driver library (libcuda.so.1, or ACCEL_CUDA_DRIVER), its
// version check, the table of Driver API entry points, and op_runtime_version.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

#include "backend.hpp"

#define ACCEL_CUDA_STR2(x) #x
#define ACCEL_CUDA_STR(x) ACCEL_CUDA_STR2(x)

namespace accel::cuda {

namespace {

constexpr const char* kSoname = "libcuda.so.1";
constexpr const char* kDriverVar = "ACCEL_CUDA_DRIVER";

Driver g_driver;
plugin::VendorLibrary g_library;

// cuGetProcAddress as CUDA 12.0 declares it (exported as cuGetProcAddress_v2).
using GetProcAddressFn = CUresult (*)(const char*, void**, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult*);

// One entry point: the name cuGetProcAddress takes, the versioned symbol
// cuda.h maps it to (with its slot in g_driver), and the compat name.
struct EntryPoint {
  const char* base;
  plugin::Symbol symbol;
  const char* compat;
};

// cuGetProcAddress(base name, header version) first: it picks the variant
// matching the header this plugin was built with. Then dlsym of the
// versioned name, then of the compat name (11.x drivers have no
// cuGetProcAddress_v2). Returns how many came from cuGetProcAddress; the
// names of those found nowhere are appended to `missing`.
int resolve_entry_points(GetProcAddressFn gpa, std::string& missing) {
  Driver& d = g_driver;
#define ACCEL_CUDA_ENTRY(name, compat) \
  EntryPoint{#name, plugin::symbol(ACCEL_CUDA_STR(name), &d.name), compat},
  const EntryPoint entries[] = {ACCEL_CUDA_DRIVER_FUNCTIONS(ACCEL_CUDA_ENTRY)};
#undef ACCEL_CUDA_ENTRY
  int from_gpa = 0;
  for (const EntryPoint& e : entries) {
    void* fn = nullptr;
    if (gpa != nullptr) {
      CUdriverProcAddressQueryResult found{};
      if (gpa(e.base, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS)
        fn = nullptr;
      if (fn != nullptr) ++from_gpa;
    }
    if (fn == nullptr) fn = dlsym(g_library.handle(), e.symbol.name);
    if (fn == nullptr && e.compat != nullptr) fn = dlsym(g_library.handle(), e.compat);
    e.symbol.store(e.symbol.slot, fn);
    if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(e.base);
  }
  return from_gpa;
}

// cuFuncGetParamInfo (CUDA 12.4), optional: nothing on an older driver
// (the symbol cannot be there). Where the driver has cuGetProcAddress its
// answer decides (it knows every entry point of its driver, so "not found"
// means absent); only without it is dlsym asked.
void resolve_param_info(GetProcAddressFn gpa, int version) {
  Driver& d = g_driver;
  if (version < kParamInfoDriverVersion) return;
  void* fn = nullptr;
  if (gpa != nullptr) {
    CUdriverProcAddressQueryResult found{};
    const int asked =
        CUDA_VERSION > kParamInfoDriverVersion ? CUDA_VERSION : kParamInfoDriverVersion;
    if (gpa("cuFuncGetParamInfo", &fn, asked, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS)
      fn = nullptr;
  } else {
    fn = dlsym(g_library.handle(), "cuFuncGetParamInfo");
  }
  plugin::symbol("cuFuncGetParamInfo", &d.cuFuncGetParamInfo).store(&d.cuFuncGetParamInfo, fn);
}

// The graph entry points (ACCEL_CUDA_GRAPH_FUNCTIONS), optional as a group:
// as for cuFuncGetParamInfo, cuGetProcAddress's answer decides where the
// driver has it; dlsym of the versioned name otherwise. Any one missing
// leaves Driver::graphs false (the core then records graphs itself).
void resolve_graph_functions(GetProcAddressFn gpa) {
  Driver& d = g_driver;
#define ACCEL_CUDA_GRAPH_ENTRY(name) \
  EntryPoint{#name, plugin::symbol(ACCEL_CUDA_STR(name), &d.name, false), nullptr},
  const EntryPoint entries[] = {ACCEL_CUDA_GRAPH_FUNCTIONS(ACCEL_CUDA_GRAPH_ENTRY)};
#undef ACCEL_CUDA_GRAPH_ENTRY
  bool all = true;
  for (const EntryPoint& e : entries) {
    void* fn = nullptr;
    if (gpa != nullptr) {
      CUdriverProcAddressQueryResult found{};
      if (gpa(e.base, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS)
        fn = nullptr;
    } else {
      fn = dlsym(g_library.handle(), e.symbol.name);
    }
    e.symbol.store(e.symbol.slot, fn);
    all = all && fn != nullptr;
  }
  d.graphs = all;
}

}  // namespace

Driver& driver() noexcept { return g_driver; }

std::string version_text(int version) {
  return format("%d.%d (%d)", version / 1000, (version % 1000) / 10, version);
}

accel_status_t open_driver() {
  Driver& d = g_driver;
  if (accel_status_t st = g_library.open("the CUDA driver library", {kSoname}, kDriverVar);
      st != ACCEL_SUCCESS)
    return st;
  d.path = g_library.path();
  // The override must be absolute, so only it can name something else.
  d.explicit_path = std::strcmp(g_library.path(), kSoname) != 0;

  // The version query needs no cuInit and tells the toolkit's stub apart.
  // CUDA 12.0+ exports cuGetProcAddress_v2 (flags + symbol status).
  GetProcAddressFn gpa = nullptr;
  const plugin::Symbol first[] = {
      plugin::symbol("cuDriverGetVersion", &d.cuDriverGetVersion, false),
      plugin::symbol("cuGetProcAddress_v2", &gpa, false),
  };
  if (accel_status_t st = g_library.resolve(first); st != ACCEL_SUCCESS) return st;
  if (d.cuDriverGetVersion == nullptr)
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "'%s' is not a CUDA driver library: it has no cuDriverGetVersion", d.path.c_str());
  int version = 0;
  CUresult rc = d.cuDriverGetVersion(&version);
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "'%s' is the CUDA toolkit's stub library (cuDriverGetVersion returned "
                "CUDA_ERROR_STUB_LIBRARY): no NVIDIA driver is installed",
                d.path.c_str());
  // Unavailable rather than failed: the library cannot serve as a driver.
  if (rc != CUDA_SUCCESS)
    return plugin::vendor_fail(ACCEL_ERROR_BACKEND_UNAVAILABLE, "cuDriverGetVersion", code_name(rc),
                               rc, code_text(rc));
  if (version < kMinDriverVersion)
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "the CUDA driver '%s' supports CUDA %s, older than this plugin needs: CUDA %s "
                "or newer (update the NVIDIA driver)",
                d.path.c_str(), version_text(version).c_str(),
                version_text(kMinDriverVersion).c_str());

  d.version = version;
  std::string missing;
  const int from_gpa = resolve_entry_points(gpa, missing);
  if (!missing.empty())
    return fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                "the CUDA driver '%s' (CUDA %s) lacks entry points this plugin needs: %s",
                d.path.c_str(), version_text(version).c_str(), missing.c_str());
  resolve_param_info(gpa, version);
  if (d.cuFuncGetParamInfo == nullptr)
    plugin::log(ACCEL_LOG_DEBUG,
                "the CUDA driver (CUDA %s) has no cuFuncGetParamInfo (CUDA 12.4+): kernel "
                "arguments are not checked before launch",
                version_text(version).c_str());
  resolve_graph_functions(gpa);
  if (!d.graphs)
    plugin::log(ACCEL_LOG_DEBUG,
                "the CUDA driver (CUDA %s) lacks the stream capture and graph entry points: "
                "accel records graphs itself",
                version_text(version).c_str());
  plugin::log(ACCEL_LOG_DEBUG, "loaded CUDA driver '%s' (CUDA %s); %d entry points through %s",
              d.path.c_str(), version_text(version).c_str(), from_gpa,
              gpa != nullptr ? "cuGetProcAddress (rest dlsym)" : "dlsym");
  return ACCEL_SUCCESS;
}

// cuDriverGetVersion needs no cuInit and no context, so the version is
// known at discovery and in a fork() child alike.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&] {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    int version = 0;
    ACCEL_CU_TRY(cuDriverGetVersion, (&version));
    std::snprintf(buf, size, "CUDA driver %s", version_text(version).c_str());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::cuda
