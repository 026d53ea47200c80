// accel::TypedKernel: arguments converted to the declared parameter types at
// compile time, as CUDA's <<<>>> converts them (an int literal for a float
// parameter is passed as a float), and the untyped Kernel::launch saying its
// arguments' C++ types so a backend that knows the parameters' types
// refuses an int's bits for a float. Runs on the backend ACCEL_BACKEND
// names (sim, and opencl over PoCL).
#include <accel/accel.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "accel_kernels.h"

namespace {

accel::Module load_kernels() {
  accel_module_image_t c[8];
  const size_t n = accel_kernels_images(c, 8);
  return accel::Module::load(std::vector<accel::Image>(c, c + n));
}

using Saxpy = void(float, const float*, float*, std::uint32_t);
using ReduceSum = void(const float*, float*, accel::LocalMemory, std::uint32_t);

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("cxx typed kernels: an int literal is converted to the float parameter", "[typed]") {
  accel::Module module = load_kernels();
  accel::TypedKernel<Saxpy> saxpy = module.kernel<Saxpy>("saxpy");
  REQUIRE(saxpy);
  CHECK(saxpy.untyped().attributes().num_args == 4);
  accel::Stream stream = accel::Stream::create();
  const int count = 777;  // int: converted to the uint32_t parameter
  const auto n = static_cast<std::uint32_t>(count);
  std::vector<float> x(n), y(n);
  std::iota(x.begin(), x.end(), 1.0f);
  std::iota(y.begin(), y.end(), -5.0f);
  accel::DeviceBuffer<float> dx(n, stream), dy(n, stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  const std::uint32_t block = 64, grid = (n + block - 1) / block;
  saxpy.launch(grid, block, stream, 2, dx, dy, count);  // 2 -> 2.0f, as <<<>>> does
  saxpy.launch(grid, block, std::size_t{0}, stream, 1.5, dx.data(), dy, n);  // double -> float
  std::vector<float> got(n);
  dy.copy_to(got, stream);
  stream.synchronize();
  for (std::uint32_t i = 0; i < n; ++i) {
    INFO("element " << i);
    REQUIRE(got[i] == 1.5f * x[i] + (2.0f * x[i] + y[i]));
  }

  accel::TypedKernel<ReduceSum> reduce = module.kernel<ReduceSum>(std::string("reduce_sum"));
  const std::uint32_t rb = 32, groups = (n + rb - 1) / rb;
  accel::DeviceBuffer<float> partial(groups, stream);
  reduce.launch(groups, rb, stream, dx, partial, accel::LocalMemory{rb * sizeof(float)}, n);
  std::vector<float> sums(groups);
  partial.copy_to(sums, stream);
  stream.synchronize();
  for (std::uint32_t g = 0; g < groups; ++g) {
    double want = 0;
    for (std::uint32_t i = g * rb; i < std::min(n, (g + 1) * rb); ++i) want += x[i];
    INFO("block " << g);
    REQUIRE(std::fabs(sums[g] - want) <= 1e-3 * want);
  }
}

TEST_CASE("cxx typed kernels: the untyped launch of an int for a float is refused", "[typed]") {
  accel::Module module = load_kernels();
  accel::Kernel saxpy = module.kernel("saxpy");
  accel::Stream stream = accel::Stream::create();
  const std::uint32_t n = 64;
  std::vector<float> x(n, 1.0f), y(n, 3.0f);
  accel::DeviceBuffer<float> dx(n, stream), dy(n, stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  try {
    saxpy.launch(1, n, stream, 2, dx, dy, n);  // the bits of int 2 are 2.8e-45f
    FAIL("the launch of an int for saxpy's float alpha was not refused");
  } catch (const accel::Error& e) {
    INFO(e.what());
    CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(e.message(), "argument 0 is an integer of 4 bytes"));
    CHECK(has(e.message(), "parameter 0 is float (4 bytes)"));
  }
  // A float's bits for the uint32_t n.
  CHECK_THROWS_AS(saxpy.launch(1, n, stream, 2.0f, dx, dy, 64.0f), accel::Error);
  // Nothing ran.
  std::vector<float> got(n);
  dy.copy_to(got, stream);
  stream.synchronize();
  CHECK(got == y);

  // A CUDA-style launch of the OpenCL-style reduce_sum: shared_bytes instead
  // of the local memory argument. The message says what to pass.
  accel::Kernel reduce = module.kernel("reduce_sum");
  accel::DeviceBuffer<float> partial(1, stream);
  try {
    reduce.launch(1, n, n * sizeof(float), stream, dx, partial, n);
    FAIL("a shared_bytes launch of reduce_sum without its local memory argument ran");
  } catch (const accel::Error& e) {
    INFO(e.what());
    CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
    CHECK(has(e.message(), "argument 2"));
    CHECK(has(e.message(), "accel::LocalMemory"));
    CHECK(has(e.message(), "ACCEL_KERNEL_ARG_LOCAL_MEMORY"));
  }
}
