// Devices: what a listed device is (info queries at count time), the device
// lookup, the lazily created per-device contexts, lazy_init, properties and
// device_synchronize.
#include "backend.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace accel::opencl {
namespace {

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what, T fallback) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return fallback;
  return v;
}

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
  if (std::sscanf(dev->version.c_str(), "OpenCL %d.%d", &major, &minor) == 2)
    dev->version_major = major;
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

// The enumeration (already done by device_count) is all the process-wide
// setup OpenCL needs; contexts are made per device on first use.
accel_status_t op_lazy_init() {
  return guarded("lazy_init", [&]() -> accel_status_t {
    std::vector<Device*>* devs = nullptr;
    return enumerate(devs);
  });
}

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
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
  return guarded("device_synchronize", [&]() -> accel_status_t {
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
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
    return result;
  });
}

}  // namespace accel::opencl
