// saxpy.cpp - examples/saxpy/saxpy.c with accel.hpp: the same kernel, the
// argument kinds deduced from the C++ types (a DeviceBuffer is a device
// pointer, a float a value).
#include <accel/accel.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "accel_kernels.h"  // accel_kernels_images(): the build's images

int main() try {
  if (!accel::is_available()) {
    std::printf("no accelerator: %s\n", accel_selection_reason());
    return 0;
  }
  constexpr std::uint32_t n = 1 << 20;
  const float alpha = 2.5f;
  std::vector<float> x(n), y(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = static_cast<float>(n - i);
  }

  accel_module_image_t c_images[8];
  std::vector<accel::Image> images(
      c_images, c_images + accel_kernels_images(c_images, 8));
  accel::Module module = accel::Module::load(images);
  accel::Kernel saxpy = module.kernel("saxpy");
  const auto block = static_cast<std::uint32_t>(
      std::min<std::int64_t>(256, saxpy.attributes().max_threads_per_block));

  // A named range: a slice around this work in an ACCEL_TRACE timeline (and
  // in Nsight Systems on cuda).
  accel::ScopedRange range("saxpy");
  accel::Stream stream = accel::Stream::create();
  accel::DeviceBuffer<float> dx(n, stream), dy(n, stream);
  dx.copy_from(x, stream);
  dy.copy_from(y, stream);
  const std::uint32_t blocks = (n + block - 1) / block;
  saxpy.launch(blocks, block, stream, alpha, dx, dy, n);
  dy.copy_to(y, stream);
  stream.synchronize();

  double max_error = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    double want =
        double{alpha} * static_cast<float>(i) + static_cast<float>(n - i);
    max_error =
        std::max(max_error, std::fabs(y[i] - want) / (std::fabs(want) + 1));
  }
  std::printf(
      "saxpy (C++) on %s: %u elements in %u blocks of %u, max relative error "
      "%.2g\n",
      accel_current_accelerator(), n, blocks, block, max_error);
  return max_error < 1e-6 ? 0 : 1;
} catch (const accel::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
