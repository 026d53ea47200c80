// Unit tests of the CUDA plugin's CUDA_VISIBLE_DEVICES parser and /proc GPU
// listing (compiled in from backends/cuda; no driver involved).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "proc_gpus.hpp"
#include "visible_devices.hpp"

using accel_cuda::resolve_visible_devices;
using V = std::vector<int>;

namespace {
const std::vector<std::string> kUuids = {
    "GPU-aaaa1111-0000-0000-0000-000000000000",
    "GPU-aaaa2222-0000-0000-0000-000000000000",
    "GPU-bbbb3333-0000-0000-0000-000000000000",
    "GPU-cccc4444-0000-0000-0000-000000000000",
};
V visible(const char* value, int count = 4, const std::vector<std::string>& uuids = kUuids) {
  auto r = resolve_visible_devices(value, count, uuids);
  REQUIRE(r.resolved);
  return r.physical;
}
}  // namespace

TEST_CASE("unset shows every device in order", "[visible]") {
  CHECK(visible(nullptr) == V{0, 1, 2, 3});
  CHECK(visible(nullptr, 0).empty());
}

TEST_CASE("the empty string shows no device", "[visible]") {
  auto r = resolve_visible_devices("", 4, kUuids);
  CHECK(r.resolved);
  CHECK(r.physical.empty());
  CHECK_THAT(r.note, Catch::Contains("empty"));
  CHECK(visible("  ").empty());
}

TEST_CASE("indices, order kept, blanks trimmed", "[visible]") {
  CHECK(visible("2") == V{2});
  CHECK(visible("3,1") == V{3, 1});
  CHECK(visible(" 1 , 0 ") == V{1, 0});
}

TEST_CASE("leading digits count, as strtoul reads them", "[visible]") {
  CHECK(visible("1gpu,2xyz") == V{1, 2});
}

TEST_CASE("parsing stops at the first invalid entry", "[visible]") {
  CHECK(visible("0,7,1") == V{0});       // out of range
  CHECK(visible("1,-1,2") == V{1});      // negative
  CHECK(visible("2,abc,0") == V{2});     // not a number
  CHECK(visible("1,,2") == V{1});        // empty entry
  CHECK(visible("9").empty());
  auto r = resolve_visible_devices("0,7,1", 4, kUuids);
  CHECK_THAT(r.note, Catch::Contains("'7'"));
}

TEST_CASE("a device listed twice hides every device", "[visible]") {
  CHECK(visible("0,1,0").empty());
  CHECK(visible("1,GPU-aaaa2222").empty());  // same device by index and by UUID
}

TEST_CASE("GPU- UUID prefixes", "[visible]") {
  CHECK(visible("GPU-bbbb") == V{2});
  CHECK(visible("GPU-cccc4444-0000-0000-0000-000000000000,GPU-aaaa1") == V{3, 0});
  CHECK(visible("gpu-CCCC") == V{3});                    // case-insensitive
  CHECK(visible("GPU-aaaa,1").empty());                   // ambiguous prefix: stops at once
  CHECK(visible("GPU-bbbb,GPU-ffff,GPU-cccc") == V{2});  // no match stops
  CHECK(visible("3,GPU-aaaa2") == V{3, 1});               // mixed with indices
}

TEST_CASE("what only the driver can resolve", "[visible]") {
  CHECK_FALSE(resolve_visible_devices("GPU-aaaa1", 4, {}).resolved);  // UUIDs unknown
  CHECK_FALSE(resolve_visible_devices("MIG-1234", 4, kUuids).resolved);
  CHECK_FALSE(resolve_visible_devices("0,MIG-1234", 4, kUuids).resolved);
}

TEST_CASE("/proc/driver/nvidia/gpus listing", "[proc]") {
  char tmpl[] = "/tmp/accel-proc-gpus-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string root = tmpl;
  accel_cuda::ProcGpus g;
  SECTION("absent directory") { CHECK_FALSE(accel_cuda::read_proc_gpus(root + "/nope", g)); }
  SECTION("entries in PCI order with their UUIDs") {
    const char* ids[] = {"0000:81:00.0", "0000:01:00.0"};
    const char* uuids[] = {"GPU-22222222-0000", "GPU-11111111-0000"};
    for (int i = 0; i < 2; ++i) {
      std::string dir = root + "/" + ids[i];
      REQUIRE(mkdir(dir.c_str(), 0700) == 0);
      std::ofstream(dir + "/information")
          << "Model: \t\t NVIDIA Fake\nIRQ:   \t\t 42\nGPU UUID: \t " << uuids[i]
          << " \nBus Location: \t " << ids[i] << "\n";
    }
    REQUIRE(accel_cuda::read_proc_gpus(root, g));
    CHECK(g.count == 2);
    REQUIRE(g.uuids.size() == 2);
    CHECK(g.uuids[0] == "GPU-11111111-0000");
    CHECK(g.uuids[1] == "GPU-22222222-0000");
    auto v = resolve_visible_devices("GPU-2222", g.count, g.uuids);
    CHECK(v.physical == V{1});
    SECTION("a GPU without a UUID line: UUIDs unknown, count still right") {
      std::string dir = root + "/0000:c1:00.0";
      REQUIRE(mkdir(dir.c_str(), 0700) == 0);
      std::ofstream(dir + "/information") << "Model: \t\t NVIDIA Fake\n";
      REQUIRE(accel_cuda::read_proc_gpus(root, g));
      CHECK(g.count == 3);
      CHECK(g.uuids.empty());
    }
  }
  std::string cmd = "rm -rf '" + root + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}
