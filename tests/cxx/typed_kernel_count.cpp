// Must not compile: a TypedKernel launch with one argument fewer than the
// signature has parameters (saxpy without its n). tests/cxx/meson.build
// expects the static_assert's message, and that the same file with the
// argument added compiles.
#include <accel/accel.hpp>

using Saxpy = void(float, const float*, float*, std::uint32_t);

void launch_typed(accel::TypedKernel<Saxpy> saxpy, const accel::Stream& stream, const float* x,
                  float* y) {
  saxpy.launch(1, 1, stream, 2, x, y /* n */);
}
