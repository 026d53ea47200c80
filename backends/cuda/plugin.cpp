// The accel plugin vtable of the CUDA backend: entry point, lifecycle and
// device properties; the rest lives in context/streams/memory.
//
// Capabilities: NATIVE_CURRENT_DEVICE, TIMING_EVENTS, HOST_FUNCTIONS,
// STREAM_PRIORITIES. Not FORK_SAFE: once cuInit ran in a process (lazy_init,
// or counting without NVML and /proc), a fork()ed child cannot use CUDA.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include <fmt/format.h>

#include "common.hpp"
#include "context.hpp"
#include "count.hpp"
#include "driver.hpp"
#include "errors.hpp"
#include "memory.hpp"
#include "streams.hpp"
#include "../common/plugin_ops.hpp"

namespace accel_cuda {

namespace {

int32_t g_count = 0;

// Nothing may throw across the ABI.
template <typename F>
accel_status_t guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host memory exhausted");
  } catch (const std::exception& e) {
    return fail(ACCEL_ERROR_INTERNAL, fmt::format("unexpected exception: {}", e.what()));
  } catch (...) {
    return fail(ACCEL_ERROR_INTERNAL, "unexpected exception");
  }
}

accel_status_t plugin_init() { return guarded([] { return load_driver(); }); }

extern accel_plugin_api_t g_api;

accel_status_t plugin_device_count(int32_t* count) {
  return guarded([&] {
    accel_status_t st = count_devices(count);
    if (st == ACCEL_SUCCESS) g_count = *count;
    // Counting through NVML or /proc ran no CUDA code: a fork() child may
    // still initialise CUDA itself. After cuInit it may not (the core
    // refuses the backend in such a child).
    if (counted_with_cuinit_in() == 0) g_api.capabilities |= ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE;
    return st;
  });
}

accel_status_t plugin_lazy_init() {
  return guarded([] {
    if (auto st = init_devices(g_count); st != ACCEL_SUCCESS) return st;
    return init_default_streams(g_count);
  });
}

accel_status_t get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded([&] {
    Driver& d = driver();
    CUdevice dev = cu_device(device);
    CUresult rc = d.cuDeviceGetName(props->name, static_cast<int>(sizeof props->name), dev);
    if (rc != CUDA_SUCCESS) return cuda_fail("cuDeviceGetName", rc);
    std::snprintf(props->vendor, sizeof props->vendor, "NVIDIA");
    size_t total = 0;
    ACCEL_CU_TRY(cuDeviceTotalMem, (&total, dev));
    props->total_memory = total;
    CUuuid uuid{};
    if (d.cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
      std::memcpy(props->uuid, uuid.bytes, sizeof props->uuid);
      props->has_uuid = 1;
    }
    auto attr = [&](CUdevice_attribute a, int& out) {
      return d.cuDeviceGetAttribute(&out, a, dev);
    };
    int domain = 0, bus = 0, slot = 0;
    if (attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, domain) == CUDA_SUCCESS &&
        attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, bus) == CUDA_SUCCESS &&
        attr(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, slot) == CUDA_SUCCESS) {
      std::snprintf(props->pci_bus_id, sizeof props->pci_bus_id, "%04x:%02x:%02x.0",
                    static_cast<unsigned>(domain), static_cast<unsigned>(bus),
                    static_cast<unsigned>(slot));
    }
    int major = 0, minor = 0;
    rc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major);
    if (rc == CUDA_SUCCESS) rc = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor);
    if (rc != CUDA_SUCCESS) return cuda_fail("cuDeviceGetAttribute(COMPUTE_CAPABILITY)", rc);
    std::snprintf(props->architecture, sizeof props->architecture, "sm_%d%d", major, minor);
    int sms = 0;
    rc = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms);
    if (rc != CUDA_SUCCESS) return cuda_fail("cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)", rc);
    props->compute_units = sms;
    return ACCEL_SUCCESS;
  });
}

// cuDriverGetVersion needs no cuInit and no context, so the version is
// known at discovery and in a fork() child alike.
accel_status_t plugin_runtime_version(char* buf, size_t size) {
  return guarded([&] {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    int version = 0;
    CUresult rc = driver().cuDriverGetVersion(&version);
    if (rc != CUDA_SUCCESS) return cuda_fail("cuDriverGetVersion", rc);
    std::snprintf(buf, size, "CUDA driver %s", version_text(version).c_str());
    return ACCEL_SUCCESS;
  });
}

// Every remaining member: the implementation behind guarded().
#define ACCEL_CUDA_WRAP(fn, params, args) \
  accel_status_t op_##fn params { return guarded([&] { return fn args; }); }

ACCEL_CUDA_WRAP(get_current_device, (int32_t* d), (d))
ACCEL_CUDA_WRAP(set_current_device, (int32_t d, uint32_t f), (d, f))
ACCEL_CUDA_WRAP(device_synchronize, (int32_t d), (d))
ACCEL_CUDA_WRAP(stream_priority_range, (int32_t d, int32_t* l, int32_t* g), (d, l, g))
ACCEL_CUDA_WRAP(stream_create, (int32_t d, int32_t p, accel_plugin_stream_t* s), (d, p, s))
ACCEL_CUDA_WRAP(stream_destroy, (accel_plugin_stream_t s), (s))
ACCEL_CUDA_WRAP(default_stream, (int32_t d, accel_plugin_stream_t* s), (d, s))
ACCEL_CUDA_WRAP(stream_query, (accel_plugin_stream_t s), (s))
ACCEL_CUDA_WRAP(stream_synchronize, (accel_plugin_stream_t s), (s))
ACCEL_CUDA_WRAP(stream_wait_event, (accel_plugin_stream_t s, accel_plugin_event_t e), (s, e))
ACCEL_CUDA_WRAP(launch_host_func, (accel_plugin_stream_t s, accel_host_fn f, void* u), (s, f, u))
ACCEL_CUDA_WRAP(event_create, (int32_t d, uint32_t f, accel_plugin_event_t* e), (d, f, e))
ACCEL_CUDA_WRAP(event_destroy, (accel_plugin_event_t e), (e))
ACCEL_CUDA_WRAP(event_record, (accel_plugin_event_t e, accel_plugin_stream_t s), (e, s))
ACCEL_CUDA_WRAP(event_query, (accel_plugin_event_t e), (e))
ACCEL_CUDA_WRAP(event_synchronize, (accel_plugin_event_t e), (e))
ACCEL_CUDA_WRAP(event_elapsed_time, (accel_plugin_event_t a, accel_plugin_event_t b, float* ms),
                (a, b, ms))
ACCEL_CUDA_WRAP(mem_alloc, (int32_t d, size_t n, void** p), (d, n, p))
ACCEL_CUDA_WRAP(mem_free, (int32_t d, void* p), (d, p))
ACCEL_CUDA_WRAP(memcpy_async,
                (void* dst, const void* src, size_t n, accel_memcpy_kind_t k,
                 accel_plugin_stream_t s),
                (dst, src, n, k, s))
ACCEL_CUDA_WRAP(memset_async, (void* dst, int v, size_t n, accel_plugin_stream_t s),
                (dst, v, n, s))
ACCEL_CUDA_WRAP(mem_get_info, (int32_t d, size_t* f, size_t* t), (d, f, t))
#undef ACCEL_CUDA_WRAP

// Not const: device_count adds ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE.
accel_plugin_api_t g_api = {
    .struct_size = sizeof(accel_plugin_api_t),
    .abi_major = ACCEL_PLUGIN_ABI_MAJOR,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
    .name = "cuda",
    .priority = 400,
    .capabilities = ACCEL_PLUGIN_CAP_NATIVE_CURRENT_DEVICE | ACCEL_PLUGIN_CAP_TIMING_EVENTS |
                    ACCEL_PLUGIN_CAP_HOST_FUNCTIONS | ACCEL_PLUGIN_CAP_STREAM_PRIORITIES |
                    ACCEL_PLUGIN_CAP_CROSS_DEVICE_WAIT,
    .init = plugin_init,
    .device_count = plugin_device_count,
    .lazy_init = plugin_lazy_init,
    .get_device_properties = get_device_properties,
    .get_current_device = op_get_current_device,
    .set_current_device = op_set_current_device,
    ACCEL_BACKEND_COMMON_OPS(ACCEL_BACKEND_VTABLE_OP)
    .runtime_version = plugin_runtime_version,
};

}  // namespace

}  // namespace accel_cuda

extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(
    uint32_t abi_major, uint32_t /*abi_minor*/, const accel_host_services_t* host) {
  if (host == nullptr) return nullptr;
  accel_cuda::g_host = host;
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    accel_cuda::log(ACCEL_LOG_WARN,
                    fmt::format("the core speaks plugin ABI {}, this plugin ABI {}", abi_major,
                                ACCEL_PLUGIN_ABI_MAJOR));
    return nullptr;
  }
  return &accel_cuda::g_api;
}
