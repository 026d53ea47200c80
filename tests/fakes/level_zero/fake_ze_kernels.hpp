// What the fake runs for a zeCommandListAppendLaunchKernel: a snapshot of
// the kernel's group size and arguments taken at append (the specification:
// the values set are those "used when a zeCommandListAppendLaunchKernel
// variant is called"), and host implementations of the project's reference
// kernels (kernels/accel_kernels.cl: vector_add, saxpy, reduce_sum,
// index_3d, empty) run over every group and work-item of the launch.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fake_ze.hpp"
#include "fake_ze_spirv.hpp"

namespace fake_ze {

struct FakeKernel;

// One argument as zeKernelSetArgumentValue left it.
struct LaunchArg {
  ParamKind kind = ParamKind::Value;
  std::vector<unsigned char> value;  // Value: the bytes
  const void* ptr = nullptr;         // Global: the pointer
  size_t local_bytes = 0;            // Local: the size set
};

struct Launch {
  FakeKernel* kernel = nullptr;  // its `pending` count covers this launch
  std::string name;
  uint32_t count[3] = {1, 1, 1};  // group count
  uint32_t size[3] = {1, 1, 1};   // group size
  std::vector<LaunchArg> args;
  FakeDevice* dev = nullptr;
  FakeContext* ctx = nullptr;
};

// A running launch's view of its arguments. Global memory is reachable only
// inside the allocation (of the list's context, of a device the list's
// device can reach, or host memory of the context) a pointer argument
// points into, as a device's page tables would allow; an access outside it
// is a fault: the kernel stops and the fault is reported (stderr and
// fake_ze_kernel_faults()).
class Exec {
 public:
  // `limits[i]`: bytes reachable from argument i's pointer (Global only).
  Exec(const Launch& launch, std::vector<size_t> limits)
      : launch_(launch), limits_(std::move(limits)) {}

  uint32_t groups(int d) const { return launch_.count[d]; }
  uint32_t local_size(int d) const { return launch_.size[d]; }
  size_t local_bytes(size_t arg) const { return launch_.args[arg].local_bytes; }

  template <class T>
  T value(size_t arg) const {
    T v{};
    const auto& b = launch_.args[arg].value;
    std::memcpy(&v, b.data(), b.size() < sizeof v ? b.size() : sizeof v);
    return v;
  }

  // &argument[index] as a T*, or null after recording a fault.
  template <class T>
  T* global(size_t arg, uint64_t index) {
    if (!fault_.empty()) return nullptr;
    const uint64_t end = (index + 1) * sizeof(T);
    if (launch_.args[arg].ptr == nullptr || end > limits_[arg] || index > (uint64_t{1} << 56)) {
      fault("argument " + std::to_string(arg) + " (" + ptr_text(launch_.args[arg].ptr) +
            "): element " + std::to_string(index) + " is outside the memory it points into (" +
            std::to_string(limits_[arg]) + " bytes reachable)");
      return nullptr;
    }
    return static_cast<T*>(const_cast<void*>(launch_.args[arg].ptr)) + index;
  }

  void fault(std::string what) {
    if (fault_.empty()) fault_ = std::move(what);
  }
  const std::string& fault_text() const { return fault_; }
  bool ok() const { return fault_.empty(); }

 private:
  static std::string ptr_text(const void* p) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%p", p);
    return buf;
  }
  const Launch& launch_;
  std::vector<size_t> limits_;
  std::string fault_;
};

// A kernel the fake can run: its name, its parameters as the SPIR-V of
// kernels/accel_kernels.cl declares them ('g' global pointer, 'l' local
// pointer, '4' a 4-byte value), and its body.
struct HostKernel {
  const char* name;
  const char* params;
  void (*run)(Exec&);
};

// The host kernel of that name whose parameters match `sig`, or null (with
// *why saying what differs when the name is known).
const HostKernel* find_host_kernel(const SpirvKernel& sig, std::string* why);

}  // namespace fake_ze
