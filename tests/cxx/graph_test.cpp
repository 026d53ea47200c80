// accel::Graph and accel::CaptureScope over sim: a capture kept and
// replayed, the pool shared, errors as accel::Error, and a refused call
// making capture_end() throw with no graph kept.
#include <accel/accel.hpp>

#include <catch2/catch.hpp>

#include <cstdio>
#include <vector>

TEST_CASE("cxx graphs: capture scope replay and pool", "[graphs]") {
  accel::Stream s = accel::Stream::create();
  accel::DeviceBuffer<unsigned char> a(256, s), b(256, s);
  accel::Graph g;
  {
    accel::CaptureScope scope(g, s);
    accel_memset_async(a.data(), 9, 256, s.handle());
    accel_memcpy_async(b.data(), a.data(), 256, ACCEL_MEMCPY_DEVICE_TO_DEVICE, s.handle());
  }
  REQUIRE(g.handle() != nullptr);
  CHECK(g.pool() != 0);
  g.instantiate();
  g.replay(s);
  s.synchronize();
  g.replay();  // the calling thread's current stream: the default stream
  accel::current_stream().synchronize();
  std::vector<unsigned char> out(256, 0);
  accel_memcpy_async(out.data(), b.data(), 256, ACCEL_MEMCPY_DEVICE_TO_HOST, s.handle());
  s.synchronize();
  CHECK(out == std::vector<unsigned char>(256, 9));
  const std::string path = "accel-cxx-graph.dot";
  g.debug_dump(path);
  CHECK(std::remove(path.c_str()) == 0);

  // A second graph in the first one's pool.
  accel::Graph h;
  h.capture_begin(s, ACCEL_CAPTURE_MODE_GLOBAL, g.pool());
  h.capture_end();
  CHECK(h.pool() == g.pool());
  g.reset();
  CHECK(g.handle() == nullptr);
  CHECK(accel::graph_pool_handle() != 0);
}

TEST_CASE("cxx graphs: a refused call makes capture_end throw and keeps no graph", "[graphs]") {
  accel::Stream s = accel::Stream::create();
  accel::Graph g;
  g.capture_begin(s);
  try {
    s.synchronize();
    FAIL("synchronizing a capturing stream did not throw");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  try {
    g.capture_end();
    FAIL("capture_end after a refused call did not throw");
  } catch (const accel::Error& e) {
    CHECK(e.status() == ACCEL_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  CHECK(g.handle() == nullptr);
  // The default stream cannot capture.
  CHECK_THROWS_AS(g.capture_begin(accel::Stream::current()), accel::Error);
}
