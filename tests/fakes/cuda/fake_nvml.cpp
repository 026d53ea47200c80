// A fake libnvidia-ml.so.1: the five NVML calls the CUDA plugin counts
// devices with, over the same machine as the fake driver (FAKE_CUDA_DEVICES).
// Counting through it creates no CUDA context, like the real NVML.
#include <cstdint>
#include <cstring>

#include "fake_model.hpp"

extern "C" {

struct nvmlDevice_st;
typedef struct nvmlDevice_st* nvmlDevice_t;

#define FAKE_NVML_EXPORT __attribute__((visibility("default")))

FAKE_NVML_EXPORT int nvmlInit_v2(void) { return 0; }
FAKE_NVML_EXPORT int nvmlShutdown(void) { return 0; }

FAKE_NVML_EXPORT int nvmlDeviceGetCount_v2(unsigned* count) {
  if (count == nullptr) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *count = static_cast<unsigned>(fake_cuda::physical_devices());
  return 0;
}

FAKE_NVML_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t* device) {
  if (device == nullptr || index >= static_cast<unsigned>(fake_cuda::physical_devices())) return 2;
  *device = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(index) + 1);
  return 0;
}

FAKE_NVML_EXPORT int nvmlDeviceGetUuid(nvmlDevice_t device, char* uuid, unsigned length) {
  auto index = static_cast<int>(reinterpret_cast<uintptr_t>(device)) - 1;
  if (uuid == nullptr || index < 0 || index >= fake_cuda::physical_devices()) return 2;
  std::string s = fake_cuda::uuid_string(index);
  if (length < s.size() + 1) return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  std::memcpy(uuid, s.c_str(), s.size() + 1);
  return 0;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(int result) {
  switch (result) {
    case 0:
      return "Success";
    case 2:
      return "Invalid Argument";
    case 7:
      return "Insufficient Size";
    default:
      return "Unknown Error";
  }
}

}  // extern "C"
