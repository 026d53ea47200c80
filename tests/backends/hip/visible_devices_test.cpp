// Unit tests of the hip plugin's pure parts: ROCR_/HIP_/CUDA_VISIBLE_DEVICES
// resolution (visible_devices.cpp) and the KFD topology reader
// (kfd_topology.cpp) over fabricated sysfs trees.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kfd_topology.hpp"
#include "visible_devices.hpp"

using accel_hip::read_kfd_topology;
using accel_hip::resolve_visible_devices;
using V = std::vector<int>;

namespace {

std::vector<std::string> gpus(int n) {
  std::vector<std::string> u;
  for (int i = 0; i < n; ++i) u.push_back("GPU-00000000000000a" + std::to_string(i));
  return u;
}

V visible(const char* rocr, const char* hip, const char* cuda, int n = 4) {
  return resolve_visible_devices(rocr, hip, cuda, gpus(n)).physical;
}

}  // namespace

TEST_CASE("no variable set: every GPU in order", "[visible]") {
  auto r = resolve_visible_devices(nullptr, nullptr, nullptr, gpus(3));
  CHECK(r.physical == V{0, 1, 2});
  CHECK(r.note.empty());
  CHECK(visible(nullptr, nullptr, nullptr, 0).empty());
}

TEST_CASE("ROCR_VISIBLE_DEVICES: indices, order, blanks", "[visible]") {
  CHECK(visible("2,0", nullptr, nullptr) == V{2, 0});
  CHECK(visible(" 3 , 1 ", nullptr, nullptr) == V{3, 1});
  CHECK(visible("1", nullptr, nullptr) == V{1});
}

TEST_CASE("ROCR_VISIBLE_DEVICES: UUIDs, case-insensitive, mixed with indices", "[visible]") {
  CHECK(visible("GPU-00000000000000a3,0", nullptr, nullptr) == V{3, 0});
  CHECK(visible("gpu-00000000000000A2", nullptr, nullptr) == V{2});
  // A GPU whose UUID is unknown cannot be named by UUID.
  std::vector<std::string> u = {"", "GPU-00000000000000b1"};
  CHECK(resolve_visible_devices("GPU-00000000000000b1,0", nullptr, nullptr, u).physical == V{1, 0});
}

TEST_CASE("ROCR_VISIBLE_DEVICES: parsing stops at the first invalid entry", "[visible]") {
  auto r = resolve_visible_devices("1,7,0", nullptr, nullptr, gpus(4));
  CHECK(r.physical == V{1});
  CHECK(r.note.find("'7'") != std::string::npos);
  CHECK(visible("0,x,1", nullptr, nullptr) == V{0});
  CHECK(visible("-1,0", nullptr, nullptr).empty());
  CHECK(visible("0,,1", nullptr, nullptr) == V{0});
  CHECK(visible("1gpu", nullptr, nullptr).empty());
  CHECK(visible("GPU-ffff,2", nullptr, nullptr).empty());
  CHECK(visible("0,GPU-00000000000000a", nullptr, nullptr) == V{0});  // a prefix is not a UUID
}

TEST_CASE("ROCR_VISIBLE_DEVICES: set but empty hides every GPU", "[visible]") {
  auto r = resolve_visible_devices("", nullptr, nullptr, gpus(2));
  CHECK(r.physical.empty());
  CHECK(r.note.find("ROCR_VISIBLE_DEVICES is empty") != std::string::npos);
  CHECK(visible("  ", nullptr, nullptr).empty());
}

TEST_CASE("duplicates are listed once", "[visible]") {
  CHECK(visible("1,1,0", nullptr, nullptr) == V{1, 0});
  CHECK(visible("GPU-00000000000000a1,1", nullptr, nullptr) == V{1});
  CHECK(visible(nullptr, "0,0,2", nullptr) == V{0, 2});
}

TEST_CASE("HIP_VISIBLE_DEVICES indexes what ROCr left visible", "[visible]") {
  CHECK(visible(nullptr, "3,1", nullptr) == V{3, 1});
  CHECK(visible("2,3", "1", nullptr) == V{3});
  CHECK(visible("2,3", "1,0", nullptr) == V{3, 2});
  // Index 2 does not exist among the two ROCr-visible GPUs: stops there.
  CHECK(visible("2,3", "0,2,1", nullptr) == V{2});
  // HIP_VISIBLE_DEVICES takes no UUIDs.
  CHECK(visible(nullptr, "GPU-00000000000000a1", nullptr).empty());
}

TEST_CASE("CUDA_VISIBLE_DEVICES is read when HIP_VISIBLE_DEVICES is unset or empty", "[visible]") {
  CHECK(visible(nullptr, nullptr, "2") == V{2});
  CHECK(visible(nullptr, "", "2,0") == V{2, 0});  // HIP treats empty as unset
  CHECK(visible(nullptr, "1", "2") == V{1});      // HIP_VISIBLE_DEVICES wins
  CHECK(visible(nullptr, nullptr, "") == V{0, 1, 2, 3});
  auto r = resolve_visible_devices(nullptr, "", "3", gpus(4));
  CHECK(r.note.find("CUDA_VISIBLE_DEVICES") != std::string::npos);
}

TEST_CASE("a blank HIP_VISIBLE_DEVICES hides every GPU", "[visible]") {
  auto r = resolve_visible_devices(nullptr, " ", nullptr, gpus(2));
  CHECK(r.physical.empty());
  CHECK(r.note.find("HIP_VISIBLE_DEVICES is empty") != std::string::npos);
}

// --- KFD topology ------------------------------------------------------------

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/accel-kfd-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
  void node(int n, const std::string& properties) const {
    std::string dir = path + "/" + std::to_string(n);
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
    std::ofstream(dir + "/properties") << properties;
  }
};

const char* kCpu = "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\ngfx_target_version 0\n";

std::string gpu(unsigned long long unique, unsigned gfx = 90010, unsigned simd = 416) {
  return "cpu_cores_count 0\nsimd_count " + std::to_string(simd) +
         "\ngfx_target_version " + std::to_string(gfx) + "\nunique_id " + std::to_string(unique) +
         "\nlocation_id 1024\n";
}

}  // namespace

TEST_CASE("KFD topology: GPU nodes in node order, CPU nodes skipped", "[kfd]") {
  TempDir t;
  t.node(0, kCpu);
  t.node(2, gpu(0x1234));
  t.node(10, gpu(0xabcdef0123456789ull));
  t.node(1, gpu(0, 0, 128));  // no gfx_target_version (older kernels): SIMDs suffice
  auto topo = read_kfd_topology(t.path);
  REQUIRE(topo.readable);
  CHECK(topo.nodes == 4);
  REQUIRE(topo.gpus.size() == 3);
  CHECK(topo.gpus[0].node == 1);
  CHECK(topo.gpus[0].uuid.empty());  // unique_id 0: unknown
  CHECK(topo.gpus[1].node == 2);
  CHECK(topo.gpus[1].uuid == "GPU-0000000000001234");
  CHECK(topo.gpus[2].node == 10);  // numeric, not lexical, order
  CHECK(topo.gpus[2].uuid == "GPU-abcdef0123456789");
  CHECK(topo.gpus[2].gfx_target_version == 90010);
}

TEST_CASE("KFD topology: an APU node (CPU cores and SIMDs) is a GPU", "[kfd]") {
  TempDir t;
  t.node(0, "cpu_cores_count 8\nsimd_count 32\ngfx_target_version 90012\n");
  auto topo = read_kfd_topology(t.path);
  REQUIRE(topo.gpus.size() == 1);
}

TEST_CASE("KFD topology: CPU only, empty, unreadable", "[kfd]") {
  {
    TempDir t;
    t.node(0, kCpu);
    auto topo = read_kfd_topology(t.path);
    CHECK(topo.readable);
    CHECK(topo.nodes == 1);
    CHECK(topo.gpus.empty());
  }
  {
    TempDir t;
    auto topo = read_kfd_topology(t.path);
    CHECK(topo.readable);
    CHECK(topo.nodes == 0);
  }
  auto topo = read_kfd_topology("/nonexistent/kfd/topology/nodes");
  CHECK_FALSE(topo.readable);
  CHECK(topo.error.find("No such file") != std::string::npos);
}

TEST_CASE("KFD topology: nodes without a properties file and other entries are ignored", "[kfd]") {
  TempDir t;
  REQUIRE(mkdir((t.path + "/0").c_str(), 0755) == 0);
  REQUIRE(mkdir((t.path + "/notanode").c_str(), 0755) == 0);
  t.node(1, gpu(7));
  auto topo = read_kfd_topology(t.path);
  CHECK(topo.nodes == 1);
  REQUIRE(topo.gpus.size() == 1);
  CHECK(topo.gpus[0].node == 1);
}
