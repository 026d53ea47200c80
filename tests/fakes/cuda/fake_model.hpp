// What the fake driver and the fake NVML agree on: the physical devices of
// the simulated machine (FAKE_CUDA_DEVICES, default 2) and their UUIDs.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace fake_cuda {

inline int physical_devices() {
  const char* v = std::getenv("FAKE_CUDA_DEVICES");
  if (v == nullptr || *v == '\0') return 2;
  int n = std::atoi(v);
  return n < 0 ? 0 : (n > 64 ? 64 : n);
}

// 16 bytes: fa ce 0c da 00 00 40 00 80 00 00 00 00 00 00 <i>
inline void uuid_bytes(int physical, unsigned char out[16]) {
  const unsigned char base[16] = {0xfa, 0xce, 0x0c, 0xda, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 16; ++i) out[i] = base[i];
  out[15] = static_cast<unsigned char>(physical);
  out[14] = static_cast<unsigned char>(0x10 * physical);  // distinct early digits too
}

// "GPU-facec0da-0000-4000-8000-00000000<i>" as NVML prints UUIDs.
inline std::string uuid_string(int physical) {
  unsigned char b[16];
  uuid_bytes(physical, b);
  char s[64];
  std::snprintf(s, sizeof s,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return s;
}

}  // namespace fake_cuda
