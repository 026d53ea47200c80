// Must not compile: accel::TypedKernel::launch converts each argument to its
// parameter's declared type as a call would, and refuses one that does not
// convert (a std::string for saxpy's float alpha) and a wrong number of
// arguments with a static_assert. tests/cxx/meson.build compiles this
// twice (compile_check.py): as it is, expecting the static_assert's
// message, and with the bad argument replaced, which must compile.
#include <accel/accel.hpp>

#include <string>

using Saxpy = void(float, const float*, float*, std::uint32_t);

void launch_typed(accel::TypedKernel<Saxpy> saxpy, const accel::Stream& stream,
                  const std::string& s, const float* x, float* y) {
  saxpy.launch(1, 1, stream, s, x, y, 4u);
}
