// Must not compile, each case with its own message (tests/cxx/meson.build
// compiles it once per CASE_* macro and expects the header's static_assert
// text, then compiles it again with the fix the message asks for, which
// must compile): DeviceBuffer's copies refuse a range of another element
// type, a temporary destination and a pointer without its count with a
// message that says what to pass, not only "no known conversion".
#include <accel/accel.hpp>

#include <vector>

void element_type(accel::DeviceBuffer<float>& buf) {
#ifdef CASE_ELEMENT
  std::vector<double> host(3);
  buf.copy_from(host);
#endif
}

void temporary_destination(const accel::DeviceBuffer<float>& buf) {
#ifdef CASE_TEMPORARY
  buf.copy_to(std::vector<float>(3));
#endif
}

void bare_pointer(accel::DeviceBuffer<float>& buf, const float* host, const accel::Stream& s) {
#ifdef CASE_POINTER
  buf.copy_from(host, s);
#endif
}
