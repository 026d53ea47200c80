// Platform and device enumeration, the ACCEL_OPENCL_DEVICE_TYPE filter,
// device properties and the lazily created per-device contexts.
//
// Counting: OpenCL has no way to count devices other than asking the ICD
// loader, which loads every vendor driver listed in /etc/OpenCL/vendors (or
// OCL_ICD_VENDORS) and lets it enumerate. So device_count does exactly that,
// once per process; the result is cached and its order is stable (platform
// order, then the platform's device order). No context, queue or memory is
// created at count time: contexts appear on a device's first operation.
#include "ocl.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace accel_ocl {
namespace {

constexpr cl_device_type kDefaultTypes = CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
constexpr const char* kTypeVar = "ACCEL_OPENCL_DEVICE_TYPE";

struct Enumeration {
  std::mutex mu;
  bool done = false;
  std::string reason;  // why the list is empty (set only then)
  std::vector<Device*> devices;
};

// Never destroyed: other threads (PoCL's, the host-function workers) may
// still use devices while static destructors run at exit.
Enumeration& state() {
  static Enumeration* e = new Enumeration();
  return *e;
}

std::string type_names(cl_device_type mask) {
  if (mask == CL_DEVICE_TYPE_ALL) return "all";
  std::string s;
  auto add = [&](cl_device_type bit, const char* name) {
    if (mask & bit) {
      if (!s.empty()) s += ',';
      s += name;
    }
  };
  add(CL_DEVICE_TYPE_GPU, "gpu");
  add(CL_DEVICE_TYPE_ACCELERATOR, "accelerator");
  add(CL_DEVICE_TYPE_CPU, "cpu");
  add(CL_DEVICE_TYPE_CUSTOM, "custom");
  return s;
}

// Parses "gpu", "accelerator", "cpu", "all", or a comma-separated mix
// (case-insensitive). Returns false on anything else.
bool parse_types(const char* text, cl_device_type* mask) {
  cl_device_type m = 0;
  std::string tok;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      // trim blanks
      size_t a = tok.find_first_not_of(" \t");
      size_t b = tok.find_last_not_of(" \t");
      std::string t = a == std::string::npos ? std::string() : tok.substr(a, b - a + 1);
      if (t == "gpu") m |= CL_DEVICE_TYPE_GPU;
      else if (t == "accelerator") m |= CL_DEVICE_TYPE_ACCELERATOR;
      else if (t == "cpu") m |= CL_DEVICE_TYPE_CPU;
      else if (t == "all") m |= CL_DEVICE_TYPE_ALL;
      else return false;
      tok.clear();
      if (*p == '\0') break;
    } else {
      tok += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    }
  }
  *mask = m;
  return m != 0;
}


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

// Fills the cached description of a listed device. Only info queries: no
// context is created here.
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
      dev->pci_bus_id = format("%04x:%02x:%02x.%x", pci.pci_domain, pci.pci_bus,
                               pci.pci_device, pci.pci_function);
  }
}

// Runs the enumeration; caller holds e.mu. Hard failures (the loader itself
// failing) are returned and not cached so a later call can retry.
accel_status_t run_enumeration(Enumeration& e) {
  cl_device_type mask = kDefaultTypes;
  const char* env = host_env(kTypeVar);
  if (env && *env) {
    if (!parse_types(env, &mask)) {
      e.reason = format("%s='%s' is not valid: use gpu, accelerator, cpu or all "
                        "(or a comma-separated list of them)", kTypeVar, env);
      log_msg(ACCEL_LOG_WARN, "%s", e.reason.c_str());
      e.done = true;
      return ACCEL_SUCCESS;
    }
  }

  cl_uint nplat = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &nplat);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && nplat == 0)) {
    e.reason = format("no OpenCL platform: the ICD loader found no vendor driver "
                      "(clGetPlatformIDs returned %s (%d) with %u platforms; check "
                      "/etc/OpenCL/vendors or OCL_ICD_VENDORS)",
                      cl_error_name(err), static_cast<int>(err), nplat);
    e.done = true;
    return ACCEL_SUCCESS;
  }
  if (err != CL_SUCCESS) return cl_fail("clGetPlatformIDs", err, "(counting platforms)");
  std::vector<cl_platform_id> plats(nplat);
  err = clGetPlatformIDs(nplat, plats.data(), nullptr);
  if (err != CL_SUCCESS) return cl_fail("clGetPlatformIDs", err, "(listing platforms)");

  size_t hidden_cpu = 0, hidden_other = 0, broken = 0;
  std::string platform_names;
  for (cl_platform_id p : plats) {
    std::string pname = platform_string(p, CL_PLATFORM_NAME);
    if (!platform_names.empty()) platform_names += ", ";
    platform_names += "'" + pname + "'";
    cl_uint ndev = 0;
    err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev);
    if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && ndev == 0)) continue;
    std::vector<cl_device_id> ids(ndev);
    if (err == CL_SUCCESS) err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, ids.data(), nullptr);
    if (err != CL_SUCCESS) {
      // One broken driver must not hide the others.
      ++broken;
      log_msg(ACCEL_LOG_WARN, "platform '%s' skipped: clGetDeviceIDs failed: %s (%d)",
              pname.c_str(), cl_error_name(err), static_cast<int>(err));
      continue;
    }
    for (cl_device_id id : ids) {
      cl_device_type t = device_value<cl_device_type>(id, CL_DEVICE_TYPE, 0);
      if ((t & mask) == 0) {
        if (t & CL_DEVICE_TYPE_CPU) ++hidden_cpu;
        else ++hidden_other;
        continue;
      }
      auto* dev = new Device();
      dev->index = static_cast<int32_t>(e.devices.size());
      dev->platform = p;
      dev->id = id;
      dev->type = t;
      describe(dev);
      e.devices.push_back(dev);
      log_msg(ACCEL_LOG_DEBUG,
              "device %d: '%s' (%s) on platform '%s', %s, svm caps 0x%llx%s",
              dev->index, dev->name.c_str(), type_names(t).c_str(), pname.c_str(),
              dev->version.c_str(), static_cast<unsigned long long>(dev->svm),
              dev->priority_hints ? ", priority hints" : "");
      if (dev->priority_hints) advertise_stream_priorities();
    }
  }

  if (e.devices.empty()) {
    std::string r = format("no OpenCL device of type %s on %zu platform(s) (%s)",
                           type_names(mask).c_str(), plats.size(), platform_names.c_str());
    if (hidden_cpu)
      r += format("; %zu CPU device(s) hidden: set %s=all (or cpu) to show them", hidden_cpu,
                  kTypeVar);
    if (hidden_other)
      r += format("; %zu device(s) of other types hidden (%s=all shows them)", hidden_other,
                  kTypeVar);
    if (broken) r += format("; %zu platform(s) failed to list devices (see the log)", broken);
    e.reason = r;
  }
  e.done = true;
  return ACCEL_SUCCESS;
}

}  // namespace

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
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

accel_status_t enumerate(std::vector<Device*>** devices) {
  Enumeration& e = state();
  std::lock_guard<std::mutex> lock(e.mu);
  if (!e.done) {
    accel_status_t st = run_enumeration(e);
    if (st != ACCEL_SUCCESS) return st;
  }
  *devices = &e.devices;
  return ACCEL_SUCCESS;
}

Device* device_at(int32_t index) {
  Enumeration& e = state();
  std::lock_guard<std::mutex> lock(e.mu);
  if (index < 0 || static_cast<size_t>(index) >= e.devices.size()) return nullptr;
  return e.devices[static_cast<size_t>(index)];
}

namespace {
void CL_CALLBACK context_notify(const char* errinfo, const void*, size_t, void* user) {
  auto* dev = static_cast<Device*>(user);
  log_msg(ACCEL_LOG_WARN, "OpenCL driver message for device %d: %s", dev->index,
          errinfo ? errinfo : "(none)");
}
}  // namespace

accel_status_t device_context(Device* dev, cl_context* ctx) {
  std::lock_guard<std::mutex> lock(dev->mu);
  if (!dev->context) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(dev->platform), 0};
    cl_int err = CL_SUCCESS;
    cl_context c = clCreateContext(props, 1, &dev->id, context_notify, dev, &err);
    if (!c || err != CL_SUCCESS)
      return cl_fail("clCreateContext", err, "on %s", dev->label().c_str());
    dev->context = c;
    log_msg(ACCEL_LOG_DEBUG, "created the context of %s", dev->label().c_str());
  }
  *ctx = dev->context;
  return ACCEL_SUCCESS;
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&]() -> accel_status_t {
    *count = 0;
    std::vector<Device*>* devs = nullptr;
    accel_status_t st = enumerate(&devs);
    if (st != ACCEL_SUCCESS) return st;
    *count = static_cast<int32_t>(devs->size());
    if (devs->empty()) {
      // Success with a reason: the core shows it as why there are no devices.
      Enumeration& e = state();
      std::lock_guard<std::mutex> lock(e.mu);
      fail(ACCEL_SUCCESS, "%s", e.reason.c_str());
    }
    return ACCEL_SUCCESS;
  });
}

// lazy_init: the enumeration (already done by device_count) is all the
// process-wide setup OpenCL needs; contexts are made per device on first use.
accel_status_t op_lazy_init() {
  return guarded("lazy_init", [&]() -> accel_status_t {
    std::vector<Device*>* devs = nullptr;
    return enumerate(&devs);
  });
}

namespace {
void copy_string(char* dst, size_t cap, const std::string& src) {
  size_t n = std::min(cap - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}
}  // namespace

accel_status_t op_get_device_properties(int32_t device, accel_device_properties_t* props) {
  return guarded("get_device_properties", [&]() -> accel_status_t {
    std::vector<Device*>* devs = nullptr;
    accel_status_t st = enumerate(&devs);
    if (st != ACCEL_SUCCESS) return st;
    Device* dev = device_at(device);
    if (!dev) return fail(ACCEL_ERROR_INVALID_DEVICE, "no OpenCL device %d", device);
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

}  // namespace accel_ocl
