// hello.cpp - accel from C++ (accel.hpp): devices, a scoped device, a stream,
// a pair of timing events around a host function, and a typed device buffer.
#include <accel/accel.hpp>

#include <chrono>
#include <iostream>
#include <numeric>
#include <thread>
#include <vector>

int main() try {
  if (!accel::is_available()) {  // a normal state, not an error
    std::cout << "no accelerator: " << accel::selection_reason() << "\n";
    return 0;
  }
  std::cout << "accelerator: " << *accel::current_accelerator() << ", "
            << accel::device_count() << " device(s)\n";
  for (int d = 0; d < accel::device_count(); ++d) {
    const accel::DeviceProperties p = accel::device_properties(d);
    std::cout << "  device " << d << ": " << p.name << " (" << p.vendor
              << ")\n";
  }

  // The last device is current inside this scope; the previous one comes
  // back when `guard` is destroyed, also if something below throws.
  accel::DeviceIndexGuard guard(accel::device_count() - 1);
  accel::Stream stream = accel::Stream::create();  // destroyed at scope exit
  accel::Event start({.enable_timing = true});
  accel::Event end({.enable_timing = true});

  std::vector<float> in(1 << 16), out(in.size());
  std::iota(in.begin(), in.end(), 0.0f);
  accel::DeviceBuffer<float> buf(in.size());  // freed at scope exit

  stream.record(start);
  buf.copy_from(in, stream);
  stream.launch_host_func(
      [] { std::this_thread::sleep_for(std::chrono::milliseconds(5)); });
  buf.copy_to(out, stream);
  stream.record(end);
  end.synchronize();  // `out` is valid only after this

  if (out != in) {
    std::cout << "round trip MISMATCH\n";
    return 1;
  }
  std::cout << "round trip ok on device " << accel::current_device_index()
            << " in " << start.elapsed_time(end).count() << " ms\n";
  return 0;
} catch (const accel::Error& e) {  // status(), message() and what()
  std::cerr << e.what() << "\n";
  return 1;
}
