// clGetDeviceInfo answers as C++ values, for the files that read device
// properties (devices.cpp, modules.cpp, launch.cpp), and the string query
// platform_string shares (library.cpp).
#pragma once

#include <CL/cl.h>

#include <cstring>
#include <string>

namespace accel::opencl {

// A string property of an OpenCL object through its clGet*Info call
// (clGetDeviceInfo, clGetPlatformInfo); "" when the query fails.
template <class Object, class Info>
std::string info_string(cl_int(CL_API_CALL* get)(Object, Info, size_t, void*, size_t*), Object o,
                        Info what) {
  size_t n = 0;
  if (get(o, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (get(o, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(std::strlen(s.c_str()));
  return s;
}

// A string property; "" when the query fails.
inline std::string device_string(cl_device_id d, cl_device_info what) {
  return info_string(clGetDeviceInfo, d, what);
}

// A fixed-size property; `fallback` when the query fails.
template <class T>
T device_value(cl_device_id d, cl_device_info what, T fallback) {
  T v{};
  if (clGetDeviceInfo(d, what, sizeof v, &v, nullptr) != CL_SUCCESS) return fallback;
  return v;
}

}  // namespace accel::opencl
