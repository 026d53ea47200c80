// accel::Module / Kernel / Image over sim: loading from the build's images,
// argument kinds deduced from C++ types (T*, DeviceBuffer<T>, LocalMemory,
// values), errors as accel::Error, the build log, move-only ownership.
#include <accel/accel.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "accel_kernels.h"

namespace {

std::vector<accel::Image> build_images() {
  accel_module_image_t c[8];
  size_t n = accel_kernels_images(c, 8);
  return std::vector<accel::Image>(c, c + n);
}

}  // namespace

TEST_CASE("cxx modules: an Image owns its bytes; Image::borrow does not", "[modules]") {
  const accel_module_image_t* sim = accel_kernels_image(ACCEL_MODULE_FORMAT_SIM_HOST);
  REQUIRE(sim != nullptr);
  std::vector<std::string> blobs;
  blobs.emplace_back(static_cast<const char*>(sim->data), sim->size);
  std::vector<accel::Image> images;
  images.push_back(accel::Image::sim_host(blobs[0].data(), blobs[0].size()));
  CHECK(images[0].owns_bytes());
  // The source blob is overwritten and its vector reallocated: the Image
  // must still hold the bytes it was made from.
  blobs[0].assign(blobs[0].size(), '\0');
  for (int i = 0; i < 64; ++i) blobs.emplace_back(1000, 'x');
  const accel::Image copy = images[0];
  CHECK(copy.c_image().data == images[0].c_image().data);  // shared, not copied again
  accel::Module module = accel::Module::load(images);
  CHECK(module.kernel("saxpy").attributes().num_args == 4);

  const accel::Image borrowed = accel::Image::borrow(*sim);
  CHECK_FALSE(borrowed.owns_bytes());
  CHECK(borrowed.c_image().data == sim->data);
  CHECK(accel::Module::load({borrowed}).kernel("saxpy"));
}

TEST_CASE("cxx modules: saxpy and reduce_sum with deduced argument kinds", "[modules]") {
  accel::Module module = accel::Module::load(build_images());
  REQUIRE(module);
  accel::Kernel saxpy = module.kernel("saxpy");
  CHECK(saxpy.attributes().num_args == 4);
  accel::Stream stream = accel::Stream::create();
  const std::uint32_t n = 777;
  std::vector<float> x(n), y(n);
  std::iota(x.begin(), x.end(), 1.0f);
  std::iota(y.begin(), y.end(), -5.0f);
  accel::DeviceBuffer<float> dx(n, stream), dy(n, stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  const float alpha = 1.5f;
  saxpy.launch((n + 63) / 64, 64, stream, alpha, dx, dy, n);  // DeviceBuffer -> pointer
  std::vector<float> got(n);
  dy.copy_to(got, stream);
  stream.synchronize();
  for (std::uint32_t i = 0; i < n; ++i) REQUIRE(got[i] == alpha * x[i] + y[i]);

  accel::Kernel reduce = module.kernel("reduce_sum");
  const std::uint32_t block = 32, groups = (n + block - 1) / block;
  accel::DeviceBuffer<float> partial(groups, stream);
  const float* in = dx.data();  // a raw pointer works as well
  reduce.launch(groups, block, stream, in, partial, accel::LocalMemory{block * sizeof(float)}, n);
  std::vector<float> sums(groups);
  partial.copy_to(sums, stream);
  stream.synchronize();
  for (std::uint32_t g = 0; g < groups; ++g) {
    double want = 0;
    for (std::uint32_t i = g * block; i < std::min(n, (g + 1) * block); ++i) want += x[i];
    REQUIRE(std::fabs(sums[g] - want) <= 1e-3 * want);
  }
}

TEST_CASE("cxx modules: errors are accel::Error and nothing is loaded", "[modules]") {
  static const char garbage[] = "not an ELF file";
  try {
    accel::Module::load({accel::Image::sim_host(garbage, sizeof garbage)});
    FAIL("a garbage image loaded");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_INVALID_ARGUMENT);
  }
  try {
    accel::Module::load({accel::Image::ptx(".version 8.0\n.target sm_90\n")});
    FAIL("a PTX image loaded on sim");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_NOT_SUPPORTED);
    CHECK(std::string(e.what()).find("ptx") != std::string::npos);
  }
  accel::Module module = accel::Module::load(build_images());
  CHECK_THROWS_AS(module.kernel("missing_kernel"), accel::Error);
  accel::Kernel saxpy = module.kernel("saxpy");
  accel::Stream stream = accel::Stream::create();
  // Wrong count: refused before anything is queued.
  CHECK_THROWS_AS(saxpy.launch(1, 1, stream, 1.0f), accel::Error);
  // A double where the kernel takes a float: the size differs.
  accel::DeviceBuffer<float> d(4, stream);
  CHECK_THROWS_AS(saxpy.launch(1, 1, stream, 1.0, d, d, 4u), accel::Error);
  CHECK(accel::Module::build_log().empty());  // sim writes no log for a good load
}

TEST_CASE("cxx modules: Module is move-only and unloads once", "[modules]") {
  accel::Module a = accel::Module::load(build_images());
  accel_module_t h = a.handle();
  accel::Module b = std::move(a);
  CHECK_FALSE(a);
  CHECK(b.handle() == h);
  accel::Kernel k = b.kernel("empty");
  b.unload();
  CHECK_FALSE(b);
  CHECK_THROWS_AS(k.attributes(), accel::Error);  // died with its module
  CHECK(accel::device_module_formats() == ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SIM_HOST));
}

TEST_CASE("cxx modules: Module::load_file takes the first file the device takes", "[modules]") {
  const char* so = std::getenv("ACCEL_TEST_SIM_KERNELS");
  const char* cl = std::getenv("ACCEL_TEST_OPENCL_C");
  REQUIRE(so != nullptr);
  REQUIRE(cl != nullptr);
  const std::string missing = std::string(so) + ".missing";
  // The OpenCL C source is read but not taken by sim, the missing file is
  // skipped: the sim object is loaded.
  accel::Module module = accel::Module::load_file({missing, cl, so});
  CHECK(module.format() == ACCEL_MODULE_FORMAT_SIM_HOST);
  CHECK(module.kernel("saxpy").attributes().num_args == 4);
  const std::vector<std::string> paths{so};
  CHECK(accel::Module::load_file(paths, 1).format() == ACCEL_MODULE_FORMAT_SIM_HOST);
  try {
    (void)accel::Module::load_file({missing, cl});
    FAIL("load_file of no usable file returned");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_NOT_SUPPORTED);
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
    CHECK(std::string(e.what()).find(cl) != std::string::npos);
  }
  CHECK_THROWS_AS(accel::Module::load_file({missing}), accel::Error);
  CHECK_THROWS_AS(accel::Module().format(), accel::Error);
}
