// The vendor library: the ocl-icd loader (libOpenCL.so.1) and the platforms
// it finds, and runtime_version.
//
// Unlike the other backends this one links its vendor library instead of
// opening it with accel::plugin::VendorLibrary: OpenCL's API is the ICD
// loader's, every ICD is reached through it, and its ABI is stable. A
// missing libOpenCL.so.1 therefore makes the plugin itself fail to load,
// and the core reports dlopen's error for the plugin file (plugin-abi rule
// 9). The loader in turn loads the vendor drivers listed in
// /etc/OpenCL/vendors (or OCL_ICD_VENDORS) on the first platform query.
#include "backend.hpp"
#include "device_info.hpp"

#include <cstdio>
#include <cstring>

namespace accel::opencl {

accel_status_t list_platforms(std::vector<cl_platform_id>& out, cl_int* none_code) {
  out.clear();
  cl_uint n = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &n);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n == 0)) {
    if (none_code != nullptr) *none_code = err;
    return ACCEL_SUCCESS;
  }
  if (err != CL_SUCCESS) return vendor_fail("clGetPlatformIDs", err);
  out.resize(n);
  err = clGetPlatformIDs(n, out.data(), nullptr);
  if (err != CL_SUCCESS) {
    out.clear();
    return vendor_fail("clGetPlatformIDs", err);
  }
  return ACCEL_SUCCESS;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  return info_string(clGetPlatformInfo, p, what);
}

// Every platform the ICD loader found, listed devices or not: its name and
// CL_PLATFORM_VERSION ("OpenCL 3.0 <vendor's version text>"). Info queries
// only, no context.
accel_status_t op_runtime_version(char* buf, size_t size) {
  return guarded("runtime_version", [&]() -> accel_status_t {
    if (buf == nullptr || size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "runtime_version: buf is NULL or size is 0");
    std::vector<cl_platform_id> plats;
    if (accel_status_t st = list_platforms(plats); st != ACCEL_SUCCESS) return st;
    if (plats.empty()) return fail(ACCEL_ERROR_NOT_SUPPORTED, "no OpenCL platform");
    std::string text;
    for (cl_platform_id p : plats) {
      if (!text.empty()) text += "; ";
      text += platform_string(p, CL_PLATFORM_NAME) + ": " + platform_string(p, CL_PLATFORM_VERSION);
    }
    std::snprintf(buf, size, "%s", text.c_str());
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::opencl
