// Unit tests of the hip plugin's code object reader (backends/hip/
// code_object.cpp, msgpack.cpp) on the AMD code object hipcc made for this
// build (kernels/hip), a clang offload bundle of the same source, and
// damaged copies of both. The expected parameter layout is computed here
// from structs with the kernels' signatures: the AMDGPU ABI lays explicit
// kernel arguments out as such a struct (natural alignment).
#include <catch2/catch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "accel_kernels.h"
#include "support.hpp"
#include "code_object.hpp"
#include "msgpack.hpp"

extern "C" {
extern const unsigned char hip_test_bundle[];
extern const size_t hip_test_bundle_size;
}

namespace {

using accel::hip::KernelMetadataSet;
using accel::hip::KernelParam;

// The build's AMD image, or nullptr after saying why the test is skipped.
const accel_module_image_t* amd_image(const char* test) {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_AMD_CODE_OBJECT);
  if (im == nullptr) {
    accel_test::skipf(
        "(%s): this build made no AMD code object (hipcc not found: "
        "apt-get install hipcc, or -Dhipcc=disabled)",
        test);
  }
  return im;
}

std::vector<unsigned char> bytes_of(const accel_module_image_t& im) {
  const auto* p = static_cast<const unsigned char*>(im.data);
  return std::vector<unsigned char>(p, p + im.size);
}

struct Expected {
  size_t offset, size;
  KernelParam::Kind kind;
};

#define PTR(S, m) \
  Expected { offsetof(S, m), sizeof(S::m), KernelParam::Kind::pointer }
#define VAL(S, m) \
  Expected { offsetof(S, m), sizeof(S::m), KernelParam::Kind::value }

// The kernels' signatures (kernels/accel_kernels.cu) as structs.
struct VectorAdd {
  const float* a;
  const float* b;
  float* c;
  uint32_t n;
};
struct Saxpy {
  float alpha;
  const float* x;
  float* y;
  uint32_t n;
};
struct ReduceSum {
  const float* in;
  float* partial;
  uint32_t n;
};
struct Index3d {
  uint32_t* out;
  uint32_t width;
  uint32_t height;
};

void check_kernel(const KernelMetadataSet& set, const char* name, std::vector<Expected> want,
                  size_t end) {
  INFO("kernel " << name);
  const auto* k = set.find(name);
  REQUIRE(k != nullptr);
  REQUIRE(k->params.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("parameter " << i << " (" << k->params[i].value_kind << ")");
    CHECK(k->params[i].offset == want[i].offset);
    CHECK(k->params[i].size == want[i].size);
    CHECK(k->params[i].kind == want[i].kind);
    // hipcc's metadata gives pointers (global_buffer) but no .type_name
    // for values (LLVM writes it for OpenCL sources only): values are
    // unknown. No .is_const either, so no pointer is marked read-only.
    const uint32_t type = want[i].kind == KernelParam::Kind::pointer
                              ? uint32_t{ACCEL_KERNEL_ARG_TYPE_POINTER}
                              : uint32_t{ACCEL_KERNEL_ARG_TYPE_UNKNOWN};
    CHECK(k->params[i].type == type);
  }
  CHECK(k->explicit_bytes == end);
  CHECK(k->kernarg_segment_size >= end);
  CHECK(k->max_flat_workgroup_size >= 1);
}

bool contains(const std::string& hay, const char* needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("the build's code object: accepted with its ISA named and its parameters read",
          "[code-object]") {
  const accel_module_image_t* im = amd_image("parameters");
  if (im == nullptr) return;
  accel::hip::CodeObjectHeader h;
  std::string error;
  REQUIRE(accel::hip::check_code_object(im->data, im->size, h, error));
  CHECK(h.os_abi == 64);                                     // ELFOSABI_AMDGPU_HSA
  CHECK(h.type == 3);                                        // ET_DYN
  CHECK(accel::hip::amdgpu_mach_name(h.flags) == "gfx90a");  // kernels/hip/meson.build's arch

  const KernelMetadataSet set = accel::hip::read_kernel_metadata(im->data, im->size);
  INFO(set.why_not);
  REQUIRE(set.present);
  CHECK(set.kernels.size() == 5);
  // The AMDGPU ABI's layout ends at the last parameter, not at sizeof.
  check_kernel(set, "vector_add",
               {PTR(VectorAdd, a), PTR(VectorAdd, b), PTR(VectorAdd, c), VAL(VectorAdd, n)},
               offsetof(VectorAdd, n) + sizeof(uint32_t));
  check_kernel(set, "saxpy", {VAL(Saxpy, alpha), PTR(Saxpy, x), PTR(Saxpy, y), VAL(Saxpy, n)},
               offsetof(Saxpy, n) + sizeof(uint32_t));
  check_kernel(set, "reduce_sum", {PTR(ReduceSum, in), PTR(ReduceSum, partial), VAL(ReduceSum, n)},
               offsetof(ReduceSum, n) + sizeof(uint32_t));
  check_kernel(set, "index_3d", {PTR(Index3d, out), VAL(Index3d, width), VAL(Index3d, height)},
               offsetof(Index3d, height) + sizeof(uint32_t));
  check_kernel(set, "empty", {}, 0);
  CHECK(set.find("no_such_kernel") == nullptr);
}

TEST_CASE("damaged code objects are refused with the reason", "[code-object]") {
  const accel_module_image_t* im = amd_image("damaged");
  if (im == nullptr) return;
  const std::vector<unsigned char> good = bytes_of(*im);
  accel::hip::CodeObjectHeader h;
  std::string error;

  // Truncations: the headers point past the end (lld writes the section
  // header table last, so every shorter prefix lacks something). Exact-size
  // heap copies, so that ASan builds catch any read past the end.
  for (size_t n = 0; n < good.size(); n += (n < 256 ? 1 : 61)) {
    INFO("truncated to " << n << " of " << good.size() << " bytes");
    const std::vector<unsigned char> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    CHECK_FALSE(accel::hip::check_code_object(cut.data(), cut.size(), h, error));
    CHECK_FALSE(error.empty());
    CHECK_FALSE(accel::hip::read_kernel_metadata(cut.data(), cut.size()).present);
  }

  auto refused = [&](std::vector<unsigned char> bad, const char* why) {
    INFO("expected: " << why);
    error.clear();
    CHECK_FALSE(accel::hip::check_code_object(bad.data(), bad.size(), h, error));
    INFO("error: " << error);
    CHECK(contains(error, why));
  };
  auto bad = good;
  bad[1] = 'X';
  refused(bad, "magic");
  bad = good;
  bad[4] = 1;  // ELFCLASS32
  refused(bad, "64-bit");
  bad = good;
  bad[18] = 62;  // EM_X86_64
  bad[19] = 0;
  refused(bad, "EM_AMDGPU");
  bad = good;
  bad[58] = 40;  // e_shentsize
  refused(bad, "section headers");
}

TEST_CASE("a clang offload bundle is named as one", "[code-object]") {
  if (hip_test_bundle_size == 0) {
    accel_test::skipf("this build made no offload bundle (hipcc not found)");
    return;
  }
  accel::hip::CodeObjectHeader h;
  std::string error;
  CHECK_FALSE(accel::hip::check_code_object(hip_test_bundle, hip_test_bundle_size, h, error));
  CHECK(contains(error, "offload bundle"));
  CHECK(contains(error, "--no-gpu-bundle-output"));
}

TEST_CASE("random damage never reads outside the image", "[code-object]") {
  const accel_module_image_t* im = amd_image("random damage");
  if (im == nullptr) return;
  const std::vector<unsigned char> good = bytes_of(*im);
  std::mt19937 rng(20240915);  // fixed: a failure reproduces
  std::uniform_int_distribution<size_t> where(0, good.size() - 1);
  std::uniform_int_distribution<int> value(0, 255), count(1, 8);
  int accepted = 0, with_metadata = 0;
  for (int round = 0; round < 3000; ++round) {
    auto bad = good;
    for (int k = count(rng); k > 0; --k) bad[where(rng)] = static_cast<unsigned char>(value(rng));
    // An exact-size heap copy, so that ASan builds catch any overread.
    std::vector<unsigned char> exact(bad.begin(), bad.end());
    accel::hip::CodeObjectHeader h;
    std::string error;
    accepted += accel::hip::check_code_object(exact.data(), exact.size(), h, error);
    const KernelMetadataSet set = accel::hip::read_kernel_metadata(exact.data(), exact.size());
    if (set.present) {
      ++with_metadata;
      for (const auto& k : set.kernels) {
        for (const auto& p : k.params) {
          INFO("round " << round << " kernel " << k.name);
          REQUIRE(p.size > 0);
          REQUIRE(p.offset + p.size <= accel::hip::kMaxKernargBytes);
          REQUIRE(p.offset + p.size <= k.explicit_bytes);
        }
      }
    } else {
      CHECK_FALSE(set.why_not.empty());
    }
  }
  // Most damage lands in code or padding: the reader keeps working there.
  CHECK(accepted > 0);
  CHECK(with_metadata > 0);
}

TEST_CASE("msgpack: values and nesting and malformed input", "[msgpack]") {
  using accel::hip::msgpack::Value;
  std::vector<unsigned char> b;  // the input a parsed Value's strings point into
  auto parse = [&b](std::vector<unsigned char> input, Value& v, std::string& error) {
    b = std::move(input);
    size_t used = 0;
    const bool ok = accel::hip::msgpack::parse(b.data(), b.size(), v, &used, error);
    if (ok) CHECK(used == b.size());
    return ok;
  };
  Value v;
  std::string error;
  // {"k": [1, -1, 300, "s", nil, true]} with a map16 header.
  REQUIRE(parse(
      {0xde, 0x00, 0x01, 0xa1, 'k', 0x96, 0x01, 0xff, 0xcd, 0x01, 0x2c, 0xa1, 's', 0xc0, 0xc3}, v,
      error));
  const Value* k = v.find("k");
  REQUIRE(k != nullptr);
  REQUIRE(k->items.size() == 6);
  CHECK(k->items[0].u == 1);
  CHECK(k->items[1].i == -1);
  CHECK(k->items[2].u == 300);
  CHECK(k->items[3].s == "s");
  CHECK(k->items[4].type == Value::Type::nil);
  CHECK(k->items[5].b);
  CHECK(v.find("missing") == nullptr);

  // int8 -128, int16 -2, uint64 2^63, float64 1.5, str8, bin8, fixext1.
  REQUIRE(parse({0x97, 0xd0, 0x80, 0xd1, 0xff, 0xfe, 0xcf, 0x80, 0,    0,   0, 0,
                 0,    0,    0,    0xcb, 0x3f, 0xf8, 0,    0,    0,    0,   0, 0,
                 0xd9, 0x02, 'a',  'b',  0xc4, 0x01, 0x07, 0xd4, 0x01, 0x09},
                v, error));
  REQUIRE(v.items.size() == 7);
  CHECK(v.items[0].i == -128);
  CHECK(v.items[1].i == -2);
  CHECK(v.items[2].u == (uint64_t{1} << 63));
  CHECK(v.items[3].f == 1.5);
  CHECK(v.items[4].s == "ab");
  CHECK(v.items[5].type == Value::Type::binary);
  CHECK(v.items[6].type == Value::Type::ext);

  CHECK_FALSE(parse({0xc1}, v, error));  // never used
  CHECK(contains(error, "0xc1"));
  CHECK_FALSE(parse({0xa5, 'a', 'b'}, v, error));  // str of 5, 2 bytes
  CHECK(contains(error, "truncated"));
  CHECK_FALSE(parse({0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, v, error));  // 4G items claimed
  CHECK(contains(error, "truncated"));
  CHECK_FALSE(parse({0xdf, 0x7f, 0xff, 0xff, 0xff}, v, error));               // 2G entries claimed
  std::vector<unsigned char> deep(accel::hip::msgpack::kMaxDepth + 2, 0x91);  // [[[[...
  deep.push_back(0x01);
  CHECK_FALSE(parse(deep, v, error));
  CHECK(contains(error, "nesting"));
}
