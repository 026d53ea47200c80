// Must not compile: accel::Kernel::launch refuses an argument that is not a
// pointer, a DeviceBuffer, accel::LocalMemory or a trivially copyable value
// (a std::string would pass its own heap pointer and length to the kernel).
// tests/cxx/meson.build compiles this and expects the static_assert.
#include <accel/accel.hpp>

#include <string>

void launch_with_a_string(accel::Kernel kernel, const std::string& s) {
  kernel.launch(1, 1, s);
}
