// Unit tests of the CUDA plugin's CUDA_VISIBLE_DEVICES parser and /proc GPU
// listing (compiled in from backends/cuda; no driver involved).
//
// Every expected value says where the rule comes from:
//   [guide]  CUDA C++ Programming Guide, "CUDA Environment Variables",
//            CUDA_VISIBLE_DEVICES (examples "2,1" and "0,2,-1,1", UUID
//            prefixes, MIG-<GPU-UUID>/<GI>/<CI>);
//   [mps]    NVIDIA Multi-Process Service guide, CUDA_VISIBLE_DEVICES ("the
//            first few characters of the UUID (including GPU-)");
//   [driver] the closed driver's behaviour where NVIDIA documents nothing, as
//            PyTorch records it to match the driver (torch/cuda/__init__.py:
//            _parse_visible_devices "uses something like strtoul",
//            "Repeated ordinal results in empty set";
//            _transform_uuid_to_ordinals "Duplicates result in empty set",
//            "First invalid ordinal stops parsing");
//   [accel]  not documented anywhere: the plugin's choice, kept.
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

using accel::cuda::resolve_visible_devices;
using V = std::vector<int>;

namespace {

const std::vector<std::string> kUuids = {
    "GPU-aaaa1111-0000-0000-0000-000000000000",
    "GPU-aaaa2222-0000-0000-0000-000000000000",
    "GPU-bbbb3333-0000-0000-0000-000000000000",
    "GPU-cccc4444-0000-0000-0000-000000000000",
};
const std::vector<std::string> kNoUuids;

struct Case {
  const char* value;  // nullptr: unset
  V expect;           // physical devices, in visible order
  int count = 4;      // physical devices
  const std::vector<std::string>* uuids = &kUuids;
};

void check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    auto r = resolve_visible_devices(c.value, c.count, *c.uuids);
    INFO("CUDA_VISIBLE_DEVICES=" << (c.value ? "'" + std::string(c.value) + "'" : "(unset)")
                                 << " devices=" << c.count << "\nnote: " << r.note);
    CHECK(r.resolved);
    CHECK(r.physical == c.expect);
  }
}

}  // namespace

TEST_CASE("indices: order / invalid entries / blanks", "[visible]") {
  check({
      // [guide] only the devices listed are visible: unset lists them all.
      {nullptr, {0, 1, 2, 3}},
      {nullptr, {}, 0},
      // [guide] "enumerated in the order of the sequence": "2,1" hides 0, 2 first.
      {"2,1", {2, 1}, 3},
      {"2", {2}},
      {"3,1", {3, 1}},
      // [guide] "0,2,-1,1": devices before the invalid index only.
      {"0,2,-1,1", {0, 2}, 3},
      {"0,7,1", {0}},    // out of range
      {"2,abc,0", {2}},  // not a number
      {"1,,2", {1}},     // empty entry
      {"9", {}},
      {"+1", {}},  // [driver] strtoul-like, but no sign accepted before the digits
      // [driver] blanks around an entry are ignored (PyTorch strips each entry).
      {" 1 , 0 ", {1, 0}},
      {"\t2\n", {2}},
      // [driver] an index is its leading digits: "1gpu2,2ampere" is "1,2".
      {"1gpu,2xyz", {1, 2}},
      {"3 1", {3}},
      // [driver] the empty (or blank) string leaves no device.
      {"", {}},
      {"  ", {}},
      // [driver] a device listed twice leaves no device at all.
      {"0,1,0", {}},
      {"2,2", {}},
  });
}

TEST_CASE("GPU- UUIDs and prefixes", "[visible]") {
  check({
      // [guide] full UUIDs as nvidia-smi prints them, in the sequence's order.
      {"GPU-cccc4444-0000-0000-0000-000000000000,GPU-aaaa1111-0000-0000-0000-000000000000", {3, 0}},
      // [guide][mps] any prefix that identifies one GPU, "GPU-" included.
      {"GPU-bbbb", {2}},
      {"GPU-cccc4444-0000-0000-0000-000000000000,GPU-aaaa1", {3, 0}},
      // [guide] a prefix two GPUs share identifies none: the list stops there.
      {"GPU-aaaa,1", {}},
      {"2,GPU-aaaa", {2}},
      // [guide] a UUID no GPU has is invalid: the list stops there.
      {"GPU-bbbb,GPU-ffff,GPU-cccc", {2}},
      // [guide] identifiers are indices or UUIDs: a sequence may mix them.
      {"3,GPU-aaaa2", {3, 1}},
      // [driver] the same device by index and by UUID is a duplicate: no device.
      {"1,GPU-aaaa2222", {}},
      // [accel] UUIDs compare case-insensitively (NVML prints lower case).
      {"gpu-CCCC", {3}},
  });
}

TEST_CASE("what only the driver can resolve", "[visible]") {
  // GPU- entries need the UUIDs; without them only the driver can match.
  CHECK_FALSE(resolve_visible_devices("GPU-aaaa1", 4, kNoUuids).resolved);
  // [guide] MIG-<GPU-UUID>/<GI>/<CI>: MIG instances are known to the driver only.
  CHECK_FALSE(resolve_visible_devices("MIG-1234", 4, kUuids).resolved);
  CHECK_FALSE(resolve_visible_devices("0,MIG-1234", 4, kUuids).resolved);
}

TEST_CASE("notes say where the list stopped", "[visible]") {
  CHECK_THAT(resolve_visible_devices("0,7,1", 4, kUuids).note, Catch::Contains("'7'"));
  CHECK_THAT(resolve_visible_devices("", 4, kUuids).note, Catch::Contains("empty"));
  CHECK_THAT(resolve_visible_devices("0,1,0", 4, kUuids).note, Catch::Contains("twice"));
}

TEST_CASE("/proc/driver/nvidia/gpus listing", "[proc]") {
  char tmpl[] = "/tmp/accel-proc-gpus-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  std::string root = tmpl;
  accel::cuda::ProcGpus g;
  SECTION("absent directory") { CHECK_FALSE(accel::cuda::read_proc_gpus(root + "/nope", g)); }
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
    REQUIRE(accel::cuda::read_proc_gpus(root, g));
    CHECK(g.count == 2);
    REQUIRE(g.uuids.size() == 2);
    CHECK(g.uuids[0] == "GPU-11111111-0000");
    CHECK(g.uuids[1] == "GPU-22222222-0000");
    auto v = resolve_visible_devices("GPU-2222", g.count, g.uuids);
    CHECK(v.physical == V{1});
    SECTION("a GPU without a UUID line: UUIDs unknown; count still right") {
      std::string dir = root + "/0000:c1:00.0";
      REQUIRE(mkdir(dir.c_str(), 0700) == 0);
      std::ofstream(dir + "/information") << "Model: \t\t NVIDIA Fake\n";
      REQUIRE(accel::cuda::read_proc_gpus(root, g));
      CHECK(g.count == 3);
      CHECK(g.uuids.empty());
    }
  }
  std::string cmd = "rm -rf '" + root + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}
