// Unit tests of the hip plugin's pure parts: ROCR_/HIP_/CUDA_VISIBLE_DEVICES
// resolution (visible_devices.cpp) and the KFD topology reader
// (kfd_topology.cpp) over fabricated sysfs trees.
//
// Every expected value is what the ROCm runtime itself would show, and says
// where in the vendor's sources that comes from:
//   ROCr:  ROCR-Runtime runtime/hsa-runtime/core/runtime/amd_filter_device.cpp
//          (class RvdFilter; the examples A1-D in core/inc/amd_filter_device.h)
//          and core/runtime/amd_topology.cpp BuildTopology;
//   HIP:   ROCm clr rocclr/device/rocm/rocdevice.cpp Device::init (the
//          HIP_VISIBLE_DEVICES loop) and rocclr/utils/flags.cpp Flag::init,
//          removeQuotes.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kfd_topology.hpp"
#include "visible_devices.hpp"

using accel::hip::HipRules;
using accel::hip::read_kfd_topology;
using accel::hip::resolve_visible_devices;
using V = std::vector<int>;

namespace {

// Four GPUs as kfd_topology.cpp names them: GPUs 0 and 1 share a 14-digit
// prefix, GPU 3 has no unique_id (ROCr: "Invalid-UUID"; its agent UUID
// "GPU-XX").
const std::vector<std::string> kUuids = {
    "GPU-0123456789abcdef",
    "GPU-0123456789abcd00",
    "GPU-fedcba9876543210",
    "",
};

std::vector<std::string> first(size_t n) {
  return std::vector<std::string>(kUuids.begin(), kUuids.begin() + static_cast<long>(n));
}

const HipRules kNewest{};                                             // HIP 6.2 and later
const HipRules kHip55{/*empty_hides=*/true, /*uuid_tokens=*/false};   // HIP 5.5 - 6.1
const HipRules kHip52{/*empty_hides=*/false, /*uuid_tokens=*/false};  // HIP before 5.5

struct Case {
  const char* rocr;  // nullptr: unset
  const char* hip;
  const char* cuda;
  V expect;         // physical GPUs, in visible order
  size_t gpus = 4;  // the first `gpus` of kUuids
  HipRules rules = kNewest;
};

void check(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    auto r = resolve_visible_devices(c.rocr, c.hip, c.cuda, first(c.gpus), c.rules);
    INFO("ROCR_VISIBLE_DEVICES=" << (c.rocr ? "'" + std::string(c.rocr) + "'" : "(unset)")
                                 << " HIP_VISIBLE_DEVICES="
                                 << (c.hip ? "'" + std::string(c.hip) + "'" : "(unset)")
                                 << " CUDA_VISIBLE_DEVICES="
                                 << (c.cuda ? "'" + std::string(c.cuda) + "'" : "(unset)")
                                 << " gpus=" << c.gpus << " empty_hides=" << c.rules.empty_hides
                                 << " uuid_tokens=" << c.rules.uuid_tokens << "\nnote: " << r.note);
    CHECK(r.physical == c.expect);
  }
}

}  // namespace

TEST_CASE("no variable set: every GPU in order", "[visible]") {
  auto r = resolve_visible_devices(nullptr, nullptr, nullptr, kUuids);
  CHECK(r.physical == V{0, 1, 2, 3});
  CHECK(r.note.empty());
  CHECK(resolve_visible_devices(nullptr, nullptr, nullptr, {}).physical.empty());
}

TEST_CASE("ROCR_VISIBLE_DEVICES: the list / its tokens / where it stops", "[visible][rocr]") {
  check({
      // BuildTopology: without the variable no filter applies.
      {nullptr, nullptr, nullptr, {0, 1, 2, 3}},
      // SelectZeroDevices / BuildRvdTokenList: set but empty surfaces none (example A1).
      {"", nullptr, nullptr, {}},
      // GetUsrDeviceRank: the list's order is the enumeration order.
      {"2,0", nullptr, nullptr, {2, 0}},
      // BuildRvdTokenList: each token is trim()med (classic-locale isspace).
      {" 3 ,\t1\n", nullptr, nullptr, {3, 1}},
      // BuildUsrDeviceList: an index seen before is a terminator.
      {"0,0,1", nullptr, nullptr, {0}},
      {"1,2,1,0", nullptr, nullptr, {1, 2}},
      // ...also when the earlier one was a UUID.
      {"GPU-fedcba9876543210,2,0", nullptr, nullptr, {2}},
      // BuildUsrDeviceList: devIdx < 0 terminates (example A2: "-1" surfaces none).
      {"-1", nullptr, nullptr, {}},
      {"3,-1,0", nullptr, nullptr, {3}},
      // BuildUsrDeviceList: devIdx >= numGpus terminates (example B: "3,<uuid of 0>,4").
      {"3,GPU-0123456789abcdef,4", nullptr, nullptr, {3, 0}},
      {"1,4,0", nullptr, nullptr, {1}},
      // BuildUsrDeviceList: strtol(token, &end, 0) with *end != '\0' terminates.
      {"1a", nullptr, nullptr, {}},
      {"2,1 0", nullptr, nullptr, {2}},
      {"0,x", nullptr, nullptr, {0}},
      {"+", nullptr, nullptr, {}},
      // strtol base 0: hexadecimal after 0x/0X, octal after a leading 0, a sign.
      {"0x2,0X1", nullptr, nullptr, {2, 1}},
      {"03,00", nullptr, nullptr, {3, 0}},
      {"010", nullptr, nullptr, {}},    // octal 8: out of range
      {"1,08", nullptr, nullptr, {1}},  // '8' is no octal digit: not all consumed
      {"0x", nullptr, nullptr, {}},     // only "0" is a number, "X" is left over
      {"+2,-0", nullptr, nullptr, {2, 0}},
      // int32_t devIdx = strtol(...): the long wraps to 32 bits; LONG_MAX
      // (overflow) becomes -1.
      {"4294967297,4294967296", nullptr, nullptr, {1, 0}},
      {"99999999999999999999", nullptr, nullptr, {}},
      // BuildUsrDeviceList reads min(numGpus, tokens) tokens only.
      {"1,0,zzz", nullptr, nullptr, {1, 0}, 2},
      {"0,,1", nullptr, nullptr, {0}, 1},  // the empty token is never read
      // BuildRvdTokenList uses getline(','): a trailing comma adds no token.
      {"1,0,", nullptr, nullptr, {1, 0}},
      // An empty token that is read throws std::out_of_range (token.at(0))
      // out of BuildTopology: hsa_init fails, no GPU at all.
      {"0,,1", nullptr, nullptr, {}},
      {",1", nullptr, nullptr, {}},
      {" ", nullptr, nullptr, {}},
      {"1, ,0", nullptr, nullptr, {}},
      // No GPU: nothing is read, every value shows none.
      {"0", nullptr, nullptr, {}, 0},
  });
}

TEST_CASE("ROCR_VISIBLE_DEVICES: UUID tokens", "[visible][rocr]") {
  check({
      // BuildUsrDeviceList: a token starting with 'G' is a UUID; ProcessUuidToken
      // compares it as a prefix of the upper-case "GPU-%016lX" UUIDs.
      {"GPU-fedcba9876543210", nullptr, nullptr, {2}},
      {"GPU-fedcba", nullptr, nullptr, {2}},
      // BuildRvdTokenList upper-cases the token: any case matches.
      {"gpu-FEDCBA", nullptr, nullptr, {2}},
      {"GPU-0123456789ABCDEF,1", nullptr, nullptr, {0, 1}},
      // ProcessUuidToken: a prefix two GPUs share is no match (terminates).
      {"GPU-0123456789abcd,2", nullptr, nullptr, {}},
      {"GPU-0123456789abcde", nullptr, nullptr, {0}},
      // ProcessUuidToken: length outside [5, 20] is no match.
      {"GPU-", nullptr, nullptr, {}},
      {"GPU-f", nullptr, nullptr, {2}},
      {"GPU-fedcba98765432100", nullptr, nullptr, {}},
      // A GPU without unique_id ("Invalid-UUID") is never matched (example A3
      // "GPU-XX" surfaces none), but its index works.
      {"GPU-XX", nullptr, nullptr, {}},
      {"3,GPU-XX,0", nullptr, nullptr, {3}},
      // Any 'G' token goes through ProcessUuidToken.
      {"1,GARBAGE", nullptr, nullptr, {1}},
      // Example D: "3,<prefix of 2>,GPU-XX".
      {"3,GPU-FEDCBA98,GPU-XX", nullptr, nullptr, {3, 2}},
      // BuildUsrDeviceList: a UUID naming a GPU already listed terminates as an
      // index does. (The header's example C says "1,<uuid of GPU 1>,GPU-XX"
      // surfaces two GPUs; the code it documents stops after one.)
      {"1,GPU-0123456789ABCD00,GPU-XX", nullptr, nullptr, {1}},
  });
}

TEST_CASE("HIP_VISIBLE_DEVICES: the list over what ROCr left", "[visible][hip]") {
  check({
      // Device::init: indices into the GPU agents, in the list's order.
      {nullptr, "3,1", nullptr, {3, 1}},
      // Device::init: an index already in valid_indexes is skipped, the loop goes on.
      {nullptr, "0,0,1", nullptr, {0, 1}},
      {nullptr, "2,1,2,0", nullptr, {2, 1, 0}},
      // Device::init: str_id != std::to_string(atoi(str_id)) is invalid, and
      // nothing is trimmed.
      {nullptr, " 1", nullptr, {}},
      {nullptr, "1 ", nullptr, {}},
      {nullptr, "2, 1", nullptr, {2}},
      {nullptr, "01", nullptr, {}},
      {nullptr, "+1", nullptr, {}},
      {nullptr, "1a", nullptr, {}},
      {nullptr, "-1", nullptr, {}},
      {nullptr, "-0", nullptr, {}},
      {nullptr, "0x1", nullptr, {}},
      // Device::init: index >= gpu_agents_.size() is invalid; the loop breaks.
      {nullptr, "1,7,0", nullptr, {1}},
      {nullptr, "1,4294967297", nullptr, {1}},
      // Device::init: an empty entry is invalid ("" != "0").
      {nullptr, "1,,0", nullptr, {1}},
      {nullptr, ",1", nullptr, {}},
      // Device::init: the loop runs while pos < size: a trailing comma adds nothing.
      {nullptr, "1,0,", nullptr, {1, 0}},
      // HIP_VISIBLE_DEVICES holds a single blank: an invalid entry.
      {nullptr, " ", nullptr, {}},
  });
}

TEST_CASE("HIP_VISIBLE_DEVICES: UUID entries (HIP 6.2 and later)", "[visible][hip]") {
  check({
      // Device::init: an entry containing "GPU-" becomes the index of the first
      // agent whose HSA_AMD_AGENT_INFO_UUID contains it.
      {nullptr, "GPU-fedcba9876543210", nullptr, {2}},
      {nullptr, "GPU-fedcba,0", nullptr, {2, 0}},
      // ...which std::string::find does case-sensitively, and the agent UUID is
      // printed with lower-case hex digits (amd_gpu_agent.cpp GetInfo).
      {nullptr, "GPU-FEDCBA", nullptr, {}},
      {nullptr, "gpu-fedcba", nullptr, {}},  // no "GPU-": atoi("gpu-...") != entry
      // ...the first match wins: no ambiguity check.
      {nullptr, "GPU-0123456789abcd", nullptr, {0}},
      {nullptr, "GPU-", nullptr, {0}},
      // ...a GPU without unique_id reports "GPU-XX".
      {nullptr, "GPU-XX,0", nullptr, {3, 0}},
      // ...no match leaves the entry, which is then not an index: stop.
      {nullptr, "1,GPU-ffff,0", nullptr, {1}},
      {nullptr, "xGPU-fedcba", nullptr, {}},
      // ...and the index it became is skipped when already listed.
      {nullptr, "GPU-fedcba9876543210,2,1", nullptr, {2, 1}},
      // Before HIP 6.2 (clr commit 52db98e) such an entry is an invalid index.
      {nullptr, "GPU-fedcba9876543210", nullptr, {}, 4, kHip55},
      {nullptr, "1,GPU-fedcba", nullptr, {1}, 4, kHip52},
  });
}

TEST_CASE("HIP and ROCr compose: HIP indexes ROCr's list", "[visible][hip][rocr]") {
  check({
      // BuildTopology surfaces ROCr's list as the agents, in its order; Device::init
      // indexes gpu_agents_.
      {"2,3", "1", nullptr, {3}},
      {"2,3", "1,0", nullptr, {3, 2}},
      {"2,3", "0,2,1", nullptr, {2}},
      // ROCr's duplicate stops its list at [0]: HIP's "1" is then out of range.
      {"0,0,1", "1", nullptr, {}},
      {"0,0,1", "0", nullptr, {0}},
      // A HIP UUID entry searches the agents ROCr surfaced, not every GPU.
      {"3,1", "GPU-0123", nullptr, {1}},
      {"2", "GPU-0123", nullptr, {}},
      {"2,0", "GPU-fedcba,GPU-0123", nullptr, {2, 0}},
      // ROCr failing to initialise leaves nothing for HIP.
      {",0", "0", nullptr, {}},
  });
}

TEST_CASE("HIP: which variable / empty values / quotes", "[visible][hip]") {
  check({
      // Device::init: CUDA_VISIBLE_DEVICES when HIP_VISIBLE_DEVICES[0] == '\0'.
      {nullptr, nullptr, "2", {2}},
      {nullptr, "1", "2", {1}},
      // Flag::init (HIP 5.5 and later) stores a set-but-empty variable as " ":
      // HIP_VISIBLE_DEVICES= wins and hides every GPU, and so does
      // CUDA_VISIBLE_DEVICES= when HIP_VISIBLE_DEVICES is unset.
      {nullptr, "", "2,0", {}},
      {nullptr, "", nullptr, {}},
      {nullptr, nullptr, "", {}},
      {nullptr, "", "", {}, 4, kHip55},
      // Before HIP 5.5 Flag::init skipped empty variables: unset.
      {nullptr, "", "2,0", {2, 0}, 4, kHip52},
      {nullptr, nullptr, "", {0, 1, 2, 3}, 4, kHip52},
      {nullptr, "", "", {0, 1, 2, 3}, 4, kHip52},
      // removeQuotes: a value inside double quotes (blanks around allowed) loses
      // them; unbalanced quotes stay and make the entry invalid.
      {nullptr, "\"1,0\"", nullptr, {1, 0}},
      {nullptr, "  \"2\"  ", nullptr, {2}},
      {nullptr, "\"1", nullptr, {}},
      {nullptr, "1\"", nullptr, {}},
      // removeQuotes("\"\"") is "": HIP_VISIBLE_DEVICES counts as not given.
      {nullptr, "\"\"", "3", {3}},
      {nullptr, nullptr, "\"0,2\"", {0, 2}},
  });
}

TEST_CASE("notes say which variable applied and where a list stopped", "[visible]") {
  auto r = resolve_visible_devices("1,7,0", nullptr, nullptr, kUuids);
  CHECK(r.physical == V{1});
  CHECK_THAT(r.note, Catch::Contains("ROCR_VISIBLE_DEVICES") && Catch::Contains("'7'"));
  r = resolve_visible_devices("", nullptr, nullptr, kUuids);
  CHECK_THAT(r.note, Catch::Contains("ROCR_VISIBLE_DEVICES is empty"));
  r = resolve_visible_devices("0,,1", nullptr, nullptr, kUuids);
  CHECK_THAT(r.note, Catch::Contains("initialisation fail"));
  r = resolve_visible_devices(nullptr, "", "3", kUuids);
  CHECK_THAT(r.note, Catch::Contains("HIP_VISIBLE_DEVICES is set but empty"));
  r = resolve_visible_devices(nullptr, nullptr, "3", kUuids);
  CHECK_THAT(r.note, Catch::Contains("CUDA_VISIBLE_DEVICES=3"));
}

TEST_CASE("HIP release rules from the runtime's file name", "[visible][version]") {
  struct Row {
    const char* file;
    bool empty_hides, uuid_tokens;
  };
  const Row rows[] = {
      // No version in the name (a development link, the project's fake): newest.
      {"/opt/fake/libamdhip64.so", true, true},
      // Debian 12's runtime: before flags.cpp's empty-value change (ROCm 5.5).
      {"/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153", false, false},
      {"libamdhip64.so.5.4.50403", false, false},
      {"libamdhip64.so.5.5.30201", true, false},
      // UUIDs in HIP_VISIBLE_DEVICES: clr commit 52db98e, first in ROCm 6.2.
      {"libamdhip64.so.6.1.40093", true, false},
      {"/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.41133", true, true},
      {"libamdhip64.so.7.0.51831", true, true},
      // Major only: the newest release of that major.
      {"libamdhip64.so.5", true, false},
      {"libamdhip64.so.6", true, true},
  };
  for (const Row& row : rows) {
    INFO(row.file);
    HipRules r = accel::hip::hip_rules_for_library(row.file);
    CHECK(r.empty_hides == row.empty_hides);
    CHECK(r.uuid_tokens == row.uuid_tokens);
  }
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
  return "cpu_cores_count 0\nsimd_count " + std::to_string(simd) + "\ngfx_target_version " +
         std::to_string(gfx) + "\nunique_id " + std::to_string(unique) + "\nlocation_id 1024\n";
}

}  // namespace

TEST_CASE("KFD topology: GPU nodes in node order and CPU nodes skipped", "[kfd]") {
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

TEST_CASE("KFD topology: a node without SIMDs is no GPU whatever its gfx version", "[kfd]") {
  // libhsakmt topology.c reads simd_count into NumFComputeCores; ROCr makes GPU
  // agents (and numbers ROCR_VISIBLE_DEVICES indices) only where it is non-zero
  // (amd_topology.cpp BuildTopology, amd_filter_device.cpp BuildDeviceUuidList).
  TempDir t;
  t.node(0, kCpu);
  t.node(1, gpu(0x11, 90010, 0));
  t.node(2, gpu(0x22));
  auto topo = read_kfd_topology(t.path);
  REQUIRE(topo.gpus.size() == 1);
  CHECK(topo.gpus[0].node == 2);
}

TEST_CASE("KFD topology: an APU node (CPU cores and SIMDs) is a GPU", "[kfd]") {
  TempDir t;
  t.node(0, "cpu_cores_count 8\nsimd_count 32\ngfx_target_version 90012\n");
  auto topo = read_kfd_topology(t.path);
  REQUIRE(topo.gpus.size() == 1);
}

TEST_CASE("KFD topology: CPU only / empty / unreadable", "[kfd]") {
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
