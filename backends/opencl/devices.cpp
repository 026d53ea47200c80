// Devices: what a listed device is (info queries at count time), the device
// lookup, the lazily created per-device contexts, lazy_init, properties and
// device_synchronize; ABI 1.1: the device's native handle, peer access (none:
// every device has its own context) and attributes from clGetDeviceInfo.
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS  // clCreateCommandQueue for 1.x devices
#include "backend.hpp"
#include "device_info.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace accel::opencl {
namespace {

void CL_CALLBACK context_notify(const char* errinfo, const void*, size_t, void* user) {
  auto* dev = static_cast<Device*>(user);
  accel::plugin::log(ACCEL_LOG_WARN, "OpenCL driver message for device %d: %s", dev->index,
                     errinfo ? errinfo : "(none)");
}

void copy_string(char* dst, size_t cap, const std::string& src) {
  size_t n = std::min(cap - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

void describe(Device* dev) {
  cl_device_id d = dev->id;
  dev->name = device_string(d, CL_DEVICE_NAME);
  dev->vendor = device_string(d, CL_DEVICE_VENDOR);
  dev->version = device_string(d, CL_DEVICE_VERSION);
  dev->extensions = device_string(d, CL_DEVICE_EXTENSIONS);
  dev->global_mem = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, 0);
  dev->max_alloc = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 0);
  dev->compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS, 0);
  int major = 1, minor = 0;
  if (std::sscanf(dev->version.c_str(), "OpenCL %d.%d", &major, &minor) == 2) {
    dev->version_major = major;
    dev->version_minor = minor;
  }
  // Double precision: the extension (1.x, 2.x) or, from 3.0 where fp64 is an
  // optional feature, a non-empty CL_DEVICE_DOUBLE_FP_CONFIG. Half: the same
  // with cl_khr_fp16 and CL_DEVICE_HALF_FP_CONFIG.
  dev->fp64 = dev->has_extension("cl_khr_fp64") ||
              device_value<cl_device_fp_config>(d, CL_DEVICE_DOUBLE_FP_CONFIG, 0) != 0;
  dev->fp16 = dev->has_extension("cl_khr_fp16") ||
              device_value<cl_device_fp_config>(d, CL_DEVICE_HALF_FP_CONFIG, 0) != 0;
  // PoCL's `basic` CPU driver (named `cpu-minimal` from PoCL 5) hangs in
  // clSetUserEventStatus when a command waits on the user event: its host
  // functions use the host-side gate.
  const std::string platform = platform_string(dev->platform, CL_PLATFORM_NAME);
  if (platform == "Portable Computing Language" &&
      (dev->name.rfind("basic", 0) == 0 || dev->name.rfind("cpu-minimal", 0) == 0))
    dev->device_gates = false;
  describe_modules(dev, platform);
  describe_graphs(dev);
  // SVM is a 2.0 feature (optional again in 3.0); a 1.x device rejects the
  // query, which reads as "no SVM".
  dev->svm = dev->version_major >= 2
                 ? device_value<cl_device_svm_capabilities>(d, CL_DEVICE_SVM_CAPABILITIES, 0)
                 : 0;
  dev->priority_hints = dev->has_extension("cl_khr_priority_hints");
  dev->amd_free_memory = dev->has_extension("cl_amd_device_attribute_query");
  if (dev->has_extension("cl_khr_device_uuid")) {
    cl_uchar uuid[CL_UUID_SIZE_KHR] = {};
    if (clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, sizeof uuid, uuid, nullptr) == CL_SUCCESS) {
      std::memcpy(dev->uuid, uuid, sizeof dev->uuid);
      dev->has_uuid = true;
    }
  }
  if (dev->has_extension("cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr pci{};
    if (clGetDeviceInfo(d, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof pci, &pci, nullptr) == CL_SUCCESS)
      dev->pci_bus_id = format("%04x:%02x:%02x.%x", pci.pci_domain, pci.pci_bus, pci.pci_device,
                               pci.pci_function);
  }
}

bool Device::has_extension(const char* ext) const {
  size_t n = std::strlen(ext);
  for (size_t pos = extensions.find(ext); pos != std::string::npos;
       pos = extensions.find(ext, pos + 1)) {
    bool start_ok = pos == 0 || extensions[pos - 1] == ' ';
    bool end_ok = pos + n == extensions.size() || extensions[pos + n] == ' ';
    if (start_ok && end_ok) return true;
  }
  return false;
}

std::string Device::label() const { return format("device %d '%s'", index, name.c_str()); }

accel_status_t device_at(int32_t device_index, Device*& out) noexcept {
  std::vector<Device*>* devs = nullptr;
  if (accel_status_t st = enumerate(devs); st != ACCEL_SUCCESS) return st;
  if (device_index < 0 || static_cast<size_t>(device_index) >= devs->size())
    return fail(ACCEL_ERROR_INVALID_DEVICE, "device %d is out of range [0, %zu)",
                static_cast<int>(device_index), devs->size());
  out = (*devs)[static_cast<size_t>(device_index)];
  return ACCEL_SUCCESS;
}

accel_status_t device_context(Device* dev, cl_context* ctx) {
  std::lock_guard<std::mutex> lock(dev->mu);
  if (!dev->context) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(dev->platform), 0};
    cl_int err = CL_SUCCESS;
    cl_context c = clCreateContext(props, 1, &dev->id, context_notify, dev, &err);
    if (!c || err != CL_SUCCESS) return vendor_fail("clCreateContext", err);
    dev->context = c;
    accel::plugin::log(ACCEL_LOG_DEBUG, "created the context of %s", dev->label().c_str());
  }
  *ctx = dev->context;
  return ACCEL_SUCCESS;
}

accel_status_t staging_queue(Device* dev, cl_command_queue* q) {
  cl_context ctx = nullptr;
  if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
  std::lock_guard<std::mutex> lock(dev->mu);
  if (!dev->staging) {
    cl_int err = CL_SUCCESS;
    cl_command_queue made = nullptr;
    if (dev->version_major >= 2) {
      made = clCreateCommandQueueWithProperties(ctx, dev->id, nullptr, &err);
      if (!made || err != CL_SUCCESS)
        return vendor_fail("clCreateCommandQueueWithProperties (peer-copy staging)", err);
    } else {
      made = clCreateCommandQueue(ctx, dev->id, 0, &err);
      if (!made || err != CL_SUCCESS)
        return vendor_fail("clCreateCommandQueue (peer-copy staging)", err);
    }
    dev->staging = made;
  }
  *q = dev->staging;
  return ACCEL_SUCCESS;
}

// The enumeration (already done by device_count) is all the process-wide
// setup OpenCL needs; contexts are made per device on first use.
accel_status_t op_lazy_init() {
  return guarded("lazy_init", [&]() -> accel_status_t {
    std::vector<Device*>* devs = nullptr;
    return enumerate(devs);
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return on_device("get_device_properties", device, [&](Device* dev) -> accel_status_t {
    // Fill a full struct, then copy what the caller's struct_size covers
    // (fields are only ever appended).
    accel_device_properties_t full{};
    copy_string(full.name, sizeof full.name, dev->name);
    copy_string(full.vendor, sizeof full.vendor, dev->vendor);
    full.total_memory = dev->global_mem;
    if (dev->has_uuid) {
      std::memcpy(full.uuid, dev->uuid, sizeof full.uuid);
      full.has_uuid = 1;
    }
    copy_string(full.pci_bus_id, sizeof full.pci_bus_id, dev->pci_bus_id);
    copy_string(full.architecture, sizeof full.architecture, dev->version);
    full.compute_units = static_cast<int32_t>(dev->compute_units);
    full.device_index = dev->index;
    size_t size = std::min(props->struct_size, sizeof full);
    full.struct_size = props->struct_size;
    if (size > sizeof full.struct_size)
      std::memcpy(reinterpret_cast<char*>(props) + sizeof full.struct_size,
                  reinterpret_cast<const char*>(&full) + sizeof full.struct_size,
                  size - sizeof full.struct_size);
    return ACCEL_SUCCESS;
  });
}

// Waits for every live stream of the device, the default one included.
accel_status_t op_device_synchronize(int32_t device) {
  return on_device("device_synchronize", device, [&](Device* dev) -> accel_status_t {
    std::vector<Stream*> live;
    {
      std::lock_guard<std::mutex> lock(dev->mu);
      live.reserve(dev->streams.size());
      for (Stream* s : dev->streams) {
        // Skip a stream whose last reference is being dropped right now.
        int r = s->refs.load();
        while (r > 0 && !s->refs.compare_exchange_weak(r, r + 1)) {
        }
        if (r > 0) live.push_back(s);
      }
    }
    accel_status_t result = ACCEL_SUCCESS;
    for (Stream* s : live) {
      accel_status_t r = stream_finish(s);
      if (r != ACCEL_SUCCESS && result == ACCEL_SUCCESS) result = r;
      stream_unref(s);
    }
    // Then the queues of destroyed streams, a stream whose last reference
    // went in the loop above included: their commands are device work too.
    accel_status_t r = finish_retired(dev);
    if (r != ACCEL_SUCCESS && result == ACCEL_SUCCESS) result = r;
    return result;
  });
}

// ---------------------------------------------------------------------------
// ABI 1.1: the device's native handle, peer access, attributes, capability.
// ---------------------------------------------------------------------------

accel_status_t op_device_native_handle(int32_t device, accel_native_handle_t* out) {
  return on_device("device_native_handle", device, [&](Device* dev) -> accel_status_t {
    // The context every stream, event and allocation of the device lives in:
    // a program creates its own queues for stream_from_native in it.
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    // OpenCL names devices by handle (ordinal -1).
    return accel::backend::set_native_handle(out, ACCEL_NATIVE_OPENCL, dev->id, ctx, -1);
  });
}

// Each device has a context of its own, and an SVM pointer of one context
// means nothing to a queue of another: no device reaches another's memory.
// Copies between devices still work, staged through the host (memory.cpp).
accel_status_t op_device_can_access_peer(int32_t device, int32_t peer, int32_t* can_access) {
  return on_device_pair("device_can_access_peer", device, peer,
                        [&](Device*, Device*) -> accel_status_t {
                          *can_access = 0;
                          return ACCEL_SUCCESS;
                        });
}

accel_status_t op_device_enable_peer_access(int32_t device, int32_t peer) {
  return on_device_pair(
      "device_enable_peer_access", device, peer, [&](Device* a, Device* b) -> accel_status_t {
        return fail(ACCEL_ERROR_NOT_SUPPORTED,
                    "device_enable_peer_access: OpenCL %s cannot access the memory of %s: each "
                    "device has its own cl_context and an SVM allocation is valid only in the "
                    "context that made it (OpenCL has no peer access); copies between the two "
                    "work without it (accel_memcpy_peer_async stages them through host memory)",
                    a->label().c_str(), b->label().c_str());
      });
}

namespace {

template <class T>
accel_status_t info_value(const Device* dev, cl_device_info what, const char* name, T* out) {
  cl_int err = clGetDeviceInfo(dev->id, what, sizeof *out, out, nullptr);
  if (err != CL_SUCCESS) return vendor_fail(format("clGetDeviceInfo(%s)", name).c_str(), err);
  return ACCEL_SUCCESS;
}

accel_status_t no_attribute(const Device* dev, accel_device_attr_t attr, const char* why) {
  return fail(ACCEL_ERROR_NOT_SUPPORTED, "device_get_attribute: %s of OpenCL %s: %s",
              backend::device_attr_name(attr), dev->label().c_str(), why);
}

// The largest sub-group size: only vendor extensions tell it for a device
// (OpenCL's own sub-group queries are per kernel).
accel_status_t warp_size(const Device* dev, accel_device_attr_t attr, int64_t* v) {
  if (dev->has_extension("cl_nv_device_attribute_query")) {
    cl_uint n = 0;
    if (accel_status_t st = info_value(dev, CL_DEVICE_WARP_SIZE_NV, "CL_DEVICE_WARP_SIZE_NV", &n);
        st != ACCEL_SUCCESS)
      return st;
    *v = n;
    return ACCEL_SUCCESS;
  }
  if (dev->has_extension("cl_amd_device_attribute_query")) {
    cl_uint n = 0;
    if (accel_status_t st =
            info_value(dev, CL_DEVICE_WAVEFRONT_WIDTH_AMD, "CL_DEVICE_WAVEFRONT_WIDTH_AMD", &n);
        st != ACCEL_SUCCESS)
      return st;
    *v = n;
    return ACCEL_SUCCESS;
  }
  if (dev->has_extension("cl_intel_required_subgroup_size")) {
    size_t bytes = 0;
    cl_int err = clGetDeviceInfo(dev->id, CL_DEVICE_SUB_GROUP_SIZES_INTEL, 0, nullptr, &bytes);
    if (err != CL_SUCCESS)
      return vendor_fail("clGetDeviceInfo(CL_DEVICE_SUB_GROUP_SIZES_INTEL)", err);
    std::vector<size_t> sizes(bytes / sizeof(size_t));
    if (!sizes.empty()) {
      err = clGetDeviceInfo(dev->id, CL_DEVICE_SUB_GROUP_SIZES_INTEL, bytes, sizes.data(), nullptr);
      if (err != CL_SUCCESS)
        return vendor_fail("clGetDeviceInfo(CL_DEVICE_SUB_GROUP_SIZES_INTEL)", err);
      *v = static_cast<int64_t>(*std::max_element(sizes.begin(), sizes.end()));
      return ACCEL_SUCCESS;
    }
  }
  return no_attribute(dev, attr,
                      "OpenCL tells a sub-group size per kernel only; the device has none of "
                      "cl_nv_device_attribute_query, cl_amd_device_attribute_query, "
                      "cl_intel_required_subgroup_size");
}

}  // namespace

// Every value comes from clGetDeviceInfo at the time of the call; what
// OpenCL has no query for is ACCEL_ERROR_NOT_SUPPORTED (README.md lists both).
accel_status_t op_device_get_attribute(int32_t device, accel_device_attr_t attr, int64_t* value) {
  return on_device("device_get_attribute", device, [&](Device* dev) -> accel_status_t {
    int64_t v = 0;
    accel_status_t st = ACCEL_SUCCESS;
    switch (static_cast<int>(attr)) {
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MAJOR:  // CL_DEVICE_VERSION "OpenCL X.Y"
        v = dev->version_major;
        break;
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_MINOR:
        v = dev->version_minor;
        break;
      case ACCEL_DEVICE_ATTR_WARP_SIZE:
        st = warp_size(dev, attr, &v);
        break;
      case ACCEL_DEVICE_ATTR_MAX_THREADS_PER_BLOCK: {
        size_t n = 0;
        st = info_value(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, "CL_DEVICE_MAX_WORK_GROUP_SIZE", &n);
        v = static_cast<int64_t>(n);
        break;
      }
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X:
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Y:
      case ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_Z: {
        const cl_uint dim = static_cast<cl_uint>(attr - ACCEL_DEVICE_ATTR_MAX_BLOCK_DIM_X);
        cl_uint dims = 0;
        st = info_value(dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS,
                        "CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS", &dims);
        if (st != ACCEL_SUCCESS) break;
        if (dim >= dims)
          return no_attribute(dev, attr, "the device has fewer work-item dimensions");
        std::vector<size_t> sizes(dims);
        cl_int err = clGetDeviceInfo(dev->id, CL_DEVICE_MAX_WORK_ITEM_SIZES, dims * sizeof(size_t),
                                     sizes.data(), nullptr);
        if (err != CL_SUCCESS)
          return vendor_fail("clGetDeviceInfo(CL_DEVICE_MAX_WORK_ITEM_SIZES)", err);
        v = static_cast<int64_t>(sizes[dim]);
        break;
      }
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_X:
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Y:
      case ACCEL_DEVICE_ATTR_MAX_GRID_DIM_Z:
        return no_attribute(dev, attr,
                            "OpenCL bounds an NDRange only by size_t, not by a number of "
                            "work-groups");
      case ACCEL_DEVICE_ATTR_SHARED_MEMORY_PER_BLOCK: {
        cl_device_local_mem_type type = CL_NONE;
        st = info_value(dev, CL_DEVICE_LOCAL_MEM_TYPE, "CL_DEVICE_LOCAL_MEM_TYPE", &type);
        if (st != ACCEL_SUCCESS) break;
        cl_ulong n = 0;
        if (type != CL_NONE)
          st = info_value(dev, CL_DEVICE_LOCAL_MEM_SIZE, "CL_DEVICE_LOCAL_MEM_SIZE", &n);
        v = static_cast<int64_t>(n);  // no local memory (CL_NONE): 0 bytes
        break;
      }
      case ACCEL_DEVICE_ATTR_MULTIPROCESSOR_COUNT: {
        cl_uint n = 0;
        st = info_value(dev, CL_DEVICE_MAX_COMPUTE_UNITS, "CL_DEVICE_MAX_COMPUTE_UNITS", &n);
        v = n;
        break;
      }
      case ACCEL_DEVICE_ATTR_CLOCK_RATE_KHZ: {
        cl_uint mhz = 0;
        st = info_value(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, "CL_DEVICE_MAX_CLOCK_FREQUENCY", &mhz);
        if (st != ACCEL_SUCCESS) break;
        if (mhz == 0)
          return no_attribute(dev, attr, "CL_DEVICE_MAX_CLOCK_FREQUENCY is 0 (unknown)");
        v = static_cast<int64_t>(mhz) * 1000;
        break;
      }
      case ACCEL_DEVICE_ATTR_MEMORY_BUS_WIDTH:
        return no_attribute(dev, attr, "OpenCL has no query for the memory bus width");
      case ACCEL_DEVICE_ATTR_L2_CACHE_SIZE: {
        cl_device_mem_cache_type type = CL_NONE;
        st = info_value(dev, CL_DEVICE_GLOBAL_MEM_CACHE_TYPE, "CL_DEVICE_GLOBAL_MEM_CACHE_TYPE",
                        &type);
        if (st != ACCEL_SUCCESS) break;
        cl_ulong n = 0;
        if (type != CL_NONE)
          st = info_value(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, "CL_DEVICE_GLOBAL_MEM_CACHE_SIZE",
                          &n);
        v = static_cast<int64_t>(n);  // no global memory cache: 0 bytes
        break;
      }
      case ACCEL_DEVICE_ATTR_MAX_ALLOCATION_SIZE: {
        cl_ulong n = 0;
        st = info_value(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, "CL_DEVICE_MAX_MEM_ALLOC_SIZE", &n);
        v = static_cast<int64_t>(n);
        break;
      }
      case ACCEL_DEVICE_ATTR_INTEGRATED: {
        cl_bool b = CL_FALSE;  // deprecated in 2.0, still answered by 3.0 drivers
        st = info_value(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, "CL_DEVICE_HOST_UNIFIED_MEMORY", &b);
        v = b ? 1 : 0;
        break;
      }
      case ACCEL_DEVICE_ATTR_UNIFIED_ADDRESSING:
        // accel's device pointers are SVM: one address on host and device.
        v = (dev->svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) ? 1 : 0;
        break;
      case ACCEL_DEVICE_ATTR_MANAGED_MEMORY:
        // Memory host and device share without map/unmap.
        v = (dev->svm & (CL_DEVICE_SVM_FINE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_SYSTEM)) ? 1
                                                                                             : 0;
        break;
      case ACCEL_DEVICE_ATTR_CONCURRENT_KERNELS:
        return no_attribute(dev, attr,
                            "OpenCL has no query for whether kernels of different queues run "
                            "at once");
      case ACCEL_DEVICE_ATTR_ASYNC_ENGINE_COUNT:
        return no_attribute(dev, attr, "OpenCL has no query for copy engines");
      case ACCEL_DEVICE_ATTR_ECC_ENABLED: {
        cl_bool b = CL_FALSE;
        st = info_value(dev, CL_DEVICE_ERROR_CORRECTION_SUPPORT,
                        "CL_DEVICE_ERROR_CORRECTION_SUPPORT", &b);
        v = b ? 1 : 0;
        break;
      }
      case ACCEL_DEVICE_ATTR_COMPUTE_CAPABILITY_STEPPING:
        return no_attribute(dev, attr, "an OpenCL version has no stepping");
      default:
        return no_attribute(dev, attr, "the opencl backend does not know this attribute");
    }
    if (st != ACCEL_SUCCESS) return st;
    *value = v;
    return ACCEL_SUCCESS;
  });
}

// Without double precision no float64/complex128 tensor; without half no
// float16/complex32 (describe() reads both).
accel_status_t op_get_device_capability(int32_t device, accel_device_capability_t* capability) {
  return on_device("get_device_capability", device, [&](Device* dev) -> accel_status_t {
    if (!dev->fp64)
      capability->supported_dtypes &=
          ~(ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT64) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX128));
    if (!dev->fp16)
      capability->supported_dtypes &=
          ~(ACCEL_DTYPE_BIT(ACCEL_DTYPE_FLOAT16) | ACCEL_DTYPE_BIT(ACCEL_DTYPE_COMPLEX32));
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
