// accel-fuzz-replay: runs the fuzz harness (fuzz_api.cpp) once on each input
// file, without libFuzzer, so the seed corpus and every crash the fuzzer
// ever found (regressions/) are replayed by the normal test suite with any
// compiler.
//
//   accel-fuzz-replay FILE_OR_DIR...
//
// Directories are read non-recursively in sorted order; README* files are
// skipped. Fails when no input was found (an empty replay proves nothing).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<fs::path> in_dir;
      for (const auto& e : fs::directory_iterator(p)) {
        if (!e.is_regular_file()) continue;
        if (e.path().filename().string().rfind("README", 0) == 0) continue;
        in_dir.push_back(e.path());
      }
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "accel-fuzz-replay: %s: no such file or directory\n", argv[i]);
      return 1;
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "accel-fuzz-replay: no input files given\n");
    return 1;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    std::printf("replaying %s (%zu bytes)\n", f.string().c_str(), data.size());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  std::printf("accel-fuzz-replay: %zu inputs replayed, every invariant held\n", files.size());
  return 0;
}
