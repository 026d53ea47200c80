// Host implementations of kernels/accel_kernels.cl, run by the fake driver
// over a launch's groups and work-items (global id = group id * group size
// + local id, no global offset), so that a test's results check argument
// passing, group counts and group sizes end to end. Each follows the
// OpenCL C source statement for statement.
#include "fake_ze_kernels.hpp"

#include <cstring>

namespace fake_ze {

namespace {

struct Item {
  uint64_t global[3];
  uint32_t local[3];
  uint32_t group[3];
};

// Calls body(item) for every work-item of every group, x fastest; stops at
// the first fault.
template <class Body>
void for_each_item(Exec& x, Body&& body) {
  Item it{};
  for (it.group[2] = 0; it.group[2] < x.groups(2); ++it.group[2])
    for (it.group[1] = 0; it.group[1] < x.groups(1); ++it.group[1])
      for (it.group[0] = 0; it.group[0] < x.groups(0); ++it.group[0])
        for (it.local[2] = 0; it.local[2] < x.local_size(2); ++it.local[2])
          for (it.local[1] = 0; it.local[1] < x.local_size(1); ++it.local[1])
            for (it.local[0] = 0; it.local[0] < x.local_size(0); ++it.local[0]) {
              for (int d = 0; d < 3; ++d)
                it.global[d] = uint64_t{it.group[d]} * x.local_size(d) + it.local[d];
              body(it);
              if (!x.ok()) return;
            }
}

// c[i] = a[i] + b[i] for i < n.
void vector_add(Exec& x) {
  const uint32_t n = x.value<uint32_t>(3);
  for_each_item(x, [&](const Item& it) {
    const uint64_t i = it.global[0];
    if (i >= n) return;
    const float* a = x.global<float>(0, i);
    const float* b = x.global<float>(1, i);
    float* c = x.global<float>(2, i);
    if (a && b && c) *c = *a + *b;
  });
}

// y[i] = alpha * x[i] + y[i] for i < n.
void saxpy(Exec& x) {
  const float alpha = x.value<float>(0);
  const uint32_t n = x.value<uint32_t>(3);
  for_each_item(x, [&](const Item& it) {
    const uint64_t i = it.global[0];
    if (i >= n) return;
    const float* xs = x.global<float>(1, i);
    float* y = x.global<float>(2, i);
    if (xs && y) *y = alpha * *xs + *y;
  });
}

// partial[group] = the tree sum of in[i] (i < n, else 0) over the group's
// x extent, in the local memory argument, one float per work-item; the
// barriers make each step a phase over the group. Work-items that differ
// only in y or z do the same thing (their writes would race on a device):
// the fake runs each phase once per local x.
void reduce_sum(Exec& x) {
  const uint32_t n = x.value<uint32_t>(3);
  const size_t slots = x.local_bytes(2) / sizeof(float);
  const uint32_t lsize = x.local_size(0);
  std::vector<float> scratch(slots);
  auto slot = [&](uint64_t i) -> float* {
    if (i < slots) return &scratch[i];
    x.fault("argument 2 (local memory of " + std::to_string(x.local_bytes(2)) +
            " bytes): element " + std::to_string(i) + " is outside it");
    return nullptr;
  };
  for (uint32_t gz = 0; gz < x.groups(2); ++gz)
    for (uint32_t gy = 0; gy < x.groups(1); ++gy)
      for (uint32_t gx = 0; gx < x.groups(0); ++gx) {
        for (uint32_t lid = 0; lid < lsize; ++lid) {
          const uint64_t i = uint64_t{gx} * lsize + lid;
          float v = 0.0f;
          if (i < n) {
            const float* in = x.global<float>(0, i);
            if (in == nullptr) return;
            v = *in;
          }
          float* s = slot(lid);
          if (s == nullptr) return;
          *s = v;
        }
        for (uint32_t s = lsize / 2; s > 0; s /= 2) {
          for (uint32_t lid = 0; lid < s; ++lid) {
            float* a = slot(lid);
            float* b = slot(uint64_t{lid} + s);
            if (a == nullptr || b == nullptr) return;
            *a += *b;
          }
        }
        float* out = x.global<float>(1, gx);
        float* s0 = slot(0);
        if (out == nullptr || s0 == nullptr) return;
        *out = *s0;
      }
}

// out[(z * height + y) * width + x] = x | y << 10 | z << 20, in uint (32-bit)
// arithmetic as the source does.
void index_3d(Exec& x) {
  const uint32_t width = x.value<uint32_t>(1);
  const uint32_t height = x.value<uint32_t>(2);
  for_each_item(x, [&](const Item& it) {
    const auto gx = static_cast<uint32_t>(it.global[0]);
    const auto gy = static_cast<uint32_t>(it.global[1]);
    const auto gz = static_cast<uint32_t>(it.global[2]);
    uint32_t* out = x.global<uint32_t>(0, (gz * height + gy) * width + gx);
    if (out != nullptr) *out = gx | (gy << 10) | (gz << 20);
  });
}

void empty(Exec&) {}

const HostKernel kKernels[] = {
    {"vector_add", "ggg4", vector_add},
    {"saxpy", "4gg4", saxpy},
    {"reduce_sum", "ggl4", reduce_sum},
    {"index_3d", "g44", index_3d},
    {"empty", "", empty},
};

std::string signature(const SpirvKernel& k) {
  std::string s;
  for (const SpirvParam& p : k.params) {
    switch (p.kind) {
      case ParamKind::Global:
        s += 'g';
        break;
      case ParamKind::Local:
        s += 'l';
        break;
      case ParamKind::Value:
        s += p.size == 0 ? '?' : static_cast<char>('0' + p.size % 10);
        break;
    }
  }
  return s;
}

}  // namespace

const HostKernel* find_host_kernel(const SpirvKernel& sig, std::string* why) {
  why->clear();
  for (const HostKernel& k : kKernels) {
    if (sig.name != k.name) continue;
    const std::string got = signature(sig);
    if (got == k.params) return &k;
    *why = "parameters '" + got + "' differ from the fake's '" + k.params + "'";
    return nullptr;
  }
  *why = "the fake has no host implementation of it";
  return nullptr;
}

}  // namespace fake_ze
