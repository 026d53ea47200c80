// Unit test of backends/cuda/images.cpp: the checks module_load makes on
// an image before cuModuleLoadDataEx reads it. Images are built here byte
// by byte from the layouts images.hpp cites (an ELF64 header, the fat
// binary header) so every field can be set wrong on its own; the real
// nvcc-made cubin and fat binary go through the plugin in modules_test.cpp.
#include <catch2/catch.hpp>

#include "images.hpp"

#include "accel/accel_plugin.h"
#include "accel_kernels.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using accel::cuda::image_problem;
using accel::cuda::ImageKind;
using accel::cuda::ptx_needs_terminator;

namespace {

std::vector<unsigned char> bytes(const std::string& s) {
  return std::vector<unsigned char>(s.begin(), s.end());
}

std::string problem(ImageKind kind, const std::vector<unsigned char>& v) {
  return image_problem(kind, v.data(), v.size());
}

void put(std::vector<unsigned char>& v, size_t at, uint64_t value, size_t width) {
  for (size_t i = 0; i < width; ++i) v[at + i] = static_cast<unsigned char>(value >> (8 * i));
}

// An ELF64 little-endian EM_CUDA header with `sections` section headers of
// 64 bytes right after it, and the image as long as that.
std::vector<unsigned char> elf(unsigned sections) {
  std::vector<unsigned char> v(64 + 64 * sections, 0);
  v[0] = 0x7f, v[1] = 'E', v[2] = 'L', v[3] = 'F';
  v[4] = 2;                 // ELFCLASS64
  v[5] = 1;                 // ELFDATA2LSB
  put(v, 18, 190, 2);       // e_machine EM_CUDA
  put(v, 40, 64, 8);        // e_shoff
  put(v, 58, 64, 2);        // e_shentsize
  put(v, 60, sections, 2);  // e_shnum
  return v;
}

std::vector<unsigned char> fatbin(uint64_t payload, size_t actual_payload) {
  std::vector<unsigned char> v(16 + actual_payload, 0xaa);
  put(v, 0, 0xBA55ED50u, 4);
  put(v, 4, 1, 2);   // version
  put(v, 6, 16, 2);  // header size
  put(v, 8, payload, 8);
  return v;
}

}  // namespace

TEST_CASE("PTX: text with .version and .target; NULs only at the end", "[images]") {
  const std::string ptx = "//\n.version 9.0\n.target sm_75\n.address_size 64\n";
  CHECK(problem(ImageKind::ptx, bytes(ptx)) == "");
  CHECK(ptx_needs_terminator(bytes(ptx).data(), ptx.size()));
  std::vector<unsigned char> terminated = bytes(ptx);
  terminated.push_back(0);
  terminated.push_back(0);  // padding NULs are fine
  CHECK(problem(ImageKind::ptx, terminated) == "");
  CHECK_FALSE(ptx_needs_terminator(terminated.data(), terminated.size()));

  CHECK_THAT(problem(ImageKind::ptx, bytes("hello world")), Catch::Contains(".version"));
  CHECK_THAT(problem(ImageKind::ptx, bytes(".version 9.0\n")), Catch::Contains(".target"));
  std::vector<unsigned char> inner = bytes(ptx);
  inner[5] = 0;
  CHECK_THAT(problem(ImageKind::ptx, inner), Catch::Contains("NUL byte at offset 5"));
  // The directives after the NUL do not count: the driver stops there.
  std::vector<unsigned char> hidden = bytes("x");
  hidden.push_back(0);
  CHECK_THAT(problem(ImageKind::ptx, hidden), Catch::Contains(".version"));
  CHECK_THAT(problem(ImageKind::ptx, elf(1)), Catch::Contains("ELF"));
  CHECK_THAT(problem(ImageKind::ptx, fatbin(0, 0)), Catch::Contains("fat binary"));
}

TEST_CASE("cubin: ELF64; little-endian; EM_CUDA; tables inside the image", "[images]") {
  CHECK(problem(ImageKind::cubin, elf(0)) == "");
  CHECK(problem(ImageKind::cubin, elf(3)) == "");
  CHECK_THAT(problem(ImageKind::cubin, bytes(".version 9.0 .target sm_75")),
             Catch::Contains("ELF magic"));
  std::vector<unsigned char> v = elf(3);
  CHECK_THAT(problem(ImageKind::cubin, std::vector<unsigned char>(v.begin(), v.begin() + 40)),
             Catch::Contains("truncated"));
  v.resize(v.size() - 1);  // the last section header cut by a byte
  CHECK_THAT(problem(ImageKind::cubin, v),
             Catch::Contains("section header table ends at byte 256"));
  v = elf(1);
  v[4] = 1;  // ELFCLASS32
  CHECK_THAT(problem(ImageKind::cubin, v), Catch::Contains("64-bit"));
  v = elf(1);
  v[5] = 2;  // big-endian
  CHECK_THAT(problem(ImageKind::cubin, v), Catch::Contains("little-endian"));
  v = elf(1);
  put(v, 18, 62, 2);  // EM_X86_64
  CHECK_THAT(problem(ImageKind::cubin, v), Catch::Contains("machine 62"));
  v = elf(1);
  put(v, 40, ~uint64_t{0} - 8, 8);  // an offset that would wrap
  CHECK_THAT(problem(ImageKind::cubin, v), Catch::Contains("truncated"));
  v = elf(0);
  put(v, 32, 64, 8);  // program headers past the end
  put(v, 54, 56, 2);
  put(v, 56, 2, 2);
  CHECK_THAT(problem(ImageKind::cubin, v), Catch::Contains("program header table"));
}

TEST_CASE("fat binary: magic; header size; payload inside the image", "[images]") {
  CHECK(problem(ImageKind::fatbin, fatbin(100, 100)) == "");
  CHECK(problem(ImageKind::fatbin, fatbin(100, 150)) == "");
  CHECK_THAT(problem(ImageKind::fatbin, fatbin(100, 99)), Catch::Contains("truncated"));
  CHECK_THAT(problem(ImageKind::fatbin, fatbin(~uint64_t{0}, 8)), Catch::Contains("truncated"));
  std::vector<unsigned char> v = fatbin(0, 0);
  CHECK_THAT(problem(ImageKind::fatbin, std::vector<unsigned char>(v.begin(), v.begin() + 10)),
             Catch::Contains("truncated"));
  put(v, 6, 8, 2);
  CHECK_THAT(problem(ImageKind::fatbin, v), Catch::Contains("header size 8"));
  CHECK_THAT(problem(ImageKind::fatbin, bytes(".version 9.0\n.target sm_75\n")),
             Catch::Contains("0xba55ed50"));
  CHECK_THAT(problem(ImageKind::fatbin, bytes("ab")), Catch::Contains("magic"));
}

// The parameter types of nvcc's PTX for kernels/accel_kernels.cu, as
// kernel_get_params reports them: float is .f32, uint32_t .u32, and
// pointers .u64 without .ptr (nvcc's default), which could as well be a
// 64-bit integer: unknown.
TEST_CASE("PTX parameter types of nvcc's kernels", "[images]") {
  const accel_module_image_t* im = accel_kernels_image(ACCEL_MODULE_FORMAT_PTX);
  if (im == nullptr) {
    WARN("this build has no PTX kernels (nvcc was not found): nothing to read");
    return;
  }
  const auto types = accel::cuda::ptx_param_types(static_cast<const char*>(im->data), im->size);
  constexpr uint32_t F = ACCEL_KERNEL_ARG_TYPE_FLOAT, I = ACCEL_KERNEL_ARG_TYPE_INT,
                     U = ACCEL_KERNEL_ARG_TYPE_UNKNOWN;
  const std::map<std::string, std::vector<uint32_t>> expected = {
      {"vector_add", {U, U, U, I}}, {"saxpy", {F, U, U, I}}, {"reduce_sum", {U, U, I}},
      {"index_3d", {U, I, I}},      {"empty", {}},
  };
  for (const auto& [name, want] : expected) {
    INFO(name);
    auto it = types.find(name);
    REQUIRE(it != types.end());
    CHECK(it->second == want);
  }
}
