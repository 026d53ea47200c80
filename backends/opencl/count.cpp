// Counting at discovery: platform and device enumeration and the
// ACCEL_OPENCL_DEVICE_TYPE filter.
//
// OpenCL has no way to count devices other than asking the ICD loader, which
// loads every vendor driver listed in /etc/OpenCL/vendors (or
// OCL_ICD_VENDORS) and lets it enumerate. So device_count does exactly that,
// once per process; the result is cached and its order is stable (platform
// order, then the platform's device order). No context, queue or memory is
// created at count time: contexts appear on a device's first operation.
//
// Not fork-safe, not even after counting only: drivers may start threads
// when their platform is first queried (PoCL starts its workers then), and a
// fork() child has none of them, so its first clFinish would wait forever.
// The vtable therefore lacks ACCEL_PLUGIN_CAP_DISCOVERY_FORK_SAFE and the core
// refuses such a child with ACCEL_ERROR_FORKED.
#include "backend.hpp"

#include <cctype>

namespace accel::opencl {
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
// (case-insensitive, blanks around names ignored). False on anything else.
bool parse_types(const char* text, cl_device_type* mask) {
  cl_device_type m = 0;
  std::string tok;
  for (const char* p = text;; ++p) {
    if (*p == ',' || *p == '\0') {
      size_t a = tok.find_first_not_of(" \t");
      size_t b = tok.find_last_not_of(" \t");
      std::string t = a == std::string::npos ? std::string() : tok.substr(a, b - a + 1);
      if (t == "gpu")
        m |= CL_DEVICE_TYPE_GPU;
      else if (t == "accelerator")
        m |= CL_DEVICE_TYPE_ACCELERATOR;
      else if (t == "cpu")
        m |= CL_DEVICE_TYPE_CPU;
      else if (t == "all")
        m |= CL_DEVICE_TYPE_ALL;
      else
        return false;
      tok.clear();
      if (*p == '\0') break;
    } else {
      tok += static_cast<char>(std::tolower(static_cast<unsigned char>(*p)));
    }
  }
  *mask = m;
  return m != 0;
}

// What a platform walk left out, for the reason of an empty list.
struct Skipped {
  size_t hidden_cpu = 0;    // CPU devices outside the type mask
  size_t hidden_other = 0;  // devices of other types outside it
  size_t broken = 0;        // platforms whose device list failed
};

// Lists the devices of platform `p` whose type is in `mask` in e.devices,
// each described (describe); counts what it leaves out in `skipped`.
void list_platform_devices(Enumeration& e, cl_platform_id p, const std::string& pname,
                           cl_device_type mask, Skipped& skipped) {
  cl_uint ndev = 0;
  cl_int err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev);
  if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && ndev == 0)) return;
  std::vector<cl_device_id> ids(ndev);
  if (err == CL_SUCCESS) err = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, ids.data(), nullptr);
  if (err != CL_SUCCESS) {
    // One broken driver must not hide the others.
    ++skipped.broken;
    log_vendor_failure(ACCEL_LOG_WARN, "clGetDeviceIDs", err,
                       format("(platform '%s' skipped)", pname.c_str()).c_str());
    return;
  }
  for (cl_device_id id : ids) {
    cl_device_type t = 0;  // a failed query hides the device like an unlisted type
    if (clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof t, &t, nullptr) != CL_SUCCESS) t = 0;
    if ((t & mask) == 0) {
      if (t & CL_DEVICE_TYPE_CPU)
        ++skipped.hidden_cpu;
      else
        ++skipped.hidden_other;
      continue;
    }
    auto dev = std::make_unique<Device>();
    dev->index = static_cast<int32_t>(e.devices.size());
    dev->platform = p;
    dev->id = id;
    dev->type = t;
    describe(dev.get());
    e.devices.push_back(dev.get());
    Device* d = dev.release();
    accel::plugin::log(
        ACCEL_LOG_DEBUG, "device %d: '%s' (%s) on platform '%s', %s, svm caps 0x%llx%s", d->index,
        d->name.c_str(), type_names(t).c_str(), pname.c_str(), d->version.c_str(),
        static_cast<unsigned long long>(d->svm), d->priority_hints ? ", priority hints" : "");
    if (d->priority_hints) advertise_stream_priorities();
  }
}

// Why no device is listed: the type mask, the platforms walked and what
// each kind of skipped device would take to show.
std::string no_device_reason(cl_device_type mask, size_t platforms,
                             const std::string& platform_names, const Skipped& skipped) {
  std::string r = format("no OpenCL device of type %s on %zu platform(s) (%s)",
                         type_names(mask).c_str(), platforms, platform_names.c_str());
  if (skipped.hidden_cpu)
    r += format("; %zu CPU device(s) hidden: set %s=all (or cpu) to show them", skipped.hidden_cpu,
                kTypeVar);
  if (skipped.hidden_other)
    r += format("; %zu device(s) of other types hidden (%s=all shows them)", skipped.hidden_other,
                kTypeVar);
  if (skipped.broken)
    r += format("; %zu platform(s) failed to list devices (see the log)", skipped.broken);
  return r;
}

// Runs the enumeration; caller holds e.mu. Failures of the loader itself are
// returned and not cached so that a later call can retry.
accel_status_t run_enumeration(Enumeration& e) {
  cl_device_type mask = kDefaultTypes;
  const char* env = accel::plugin::env(kTypeVar);
  if (env && *env && !parse_types(env, &mask)) {
    e.reason = format(
        "%s='%s' is not valid: use gpu, accelerator, cpu or all "
        "(or a comma-separated list of them)",
        kTypeVar, env);
    accel::plugin::log(ACCEL_LOG_WARN, "%s", e.reason.c_str());
    e.done = true;
    return ACCEL_SUCCESS;
  }

  std::vector<cl_platform_id> plats;
  cl_int none = CL_SUCCESS;
  if (accel_status_t st = list_platforms(plats, &none); st != ACCEL_SUCCESS) return st;
  if (plats.empty()) {
    e.reason = format(
        "no OpenCL platform: the ICD loader found no vendor driver "
        "(clGetPlatformIDs returned %s (%d) with 0 platforms; check "
        "/etc/OpenCL/vendors or OCL_ICD_VENDORS)",
        cl_error_name(none), static_cast<int>(none));
    e.done = true;
    return ACCEL_SUCCESS;
  }

  Skipped skipped;
  std::string platform_names;
  for (cl_platform_id p : plats) {
    std::string pname = platform_string(p, CL_PLATFORM_NAME);
    if (!platform_names.empty()) platform_names += ", ";
    platform_names += "'" + pname + "'";
    list_platform_devices(e, p, pname, mask, skipped);
  }
  if (e.devices.empty()) e.reason = no_device_reason(mask, plats.size(), platform_names, skipped);
  e.done = true;
  return ACCEL_SUCCESS;
}

}  // namespace

accel_status_t enumerate(std::vector<Device*>*& out) noexcept {
  Enumeration& e = state();
  std::lock_guard<std::mutex> lock(e.mu);
  if (!e.done) {
    try {
      if (accel_status_t st = run_enumeration(e); st != ACCEL_SUCCESS) return st;
    } catch (const std::bad_alloc&) {
      // Start again next time; no context exists yet, so dropping the
      // devices listed so far releases nothing of OpenCL's.
      for (Device* d : e.devices) delete d;
      e.devices.clear();
      e.reason.clear();
      return fail(ACCEL_ERROR_OUT_OF_MEMORY, "enumerating OpenCL devices: out of host memory");
    }
  }
  out = &e.devices;
  return ACCEL_SUCCESS;
}

accel_status_t op_device_count(int32_t* count) {
  return guarded("device_count", [&]() -> accel_status_t {
    *count = 0;
    std::vector<Device*>* devs = nullptr;
    if (accel_status_t st = enumerate(devs); st != ACCEL_SUCCESS) return st;
    *count = static_cast<int32_t>(devs->size());
    if (devs->empty()) {
      // Success with a reason: the core shows it as why there are no devices.
      Enumeration& e = state();
      std::lock_guard<std::mutex> lock(e.mu);
      fail(ACCEL_SUCCESS, e.reason);
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
