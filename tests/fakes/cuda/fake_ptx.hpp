// The fake driver's PTX reader: just enough of the PTX ISA ("PTX Module
// Directives", "Kernel Function Parameters", "Performance-Tuning
// Directives", "State Spaces") to find a module's kernels, their parameter
// layout and the resources they declare, and to refuse text that is not a
// PTX module, as the driver's JIT refuses it (CUDA_ERROR_INVALID_PTX, with
// ptxas's error log). Of instructions it checks the opcode only ("Instructions":
// the names the ISA defines), not their operands: the fake runs host
// implementations of the kernels it knows by name (fake_kernels.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace fake_cuda {

// One kernel parameter: `.param [.align A] .type name[N]`, laid out as
// cuFuncGetParamInfo reports it (each at the next multiple of its alignment).
struct PtxParam {
  std::string name;
  size_t size = 0;
  size_t align = 1;
  size_t offset = 0;
};

// One `.entry` (a kernel; `.func` device functions are not kernels).
struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
  int max_threads = 1024;      // .maxntid / .reqntid product, else the device's 1024
  int reqntid[3] = {0, 0, 0};  // .reqntid, 0: none (a launch must use exactly it)
  size_t static_shared = 0;    // .shared variables it declares or names (not .extern)
  size_t local_bytes = 0;      // .local variables it declares
  int registers = 0;           // 32-bit slots of its .reg declarations (a stand-in for
                               // ptxas's allocation, which the fake cannot know)
  int first_line = 0;
};

struct PtxModule {
  int isa = 0;        // .version major * 10 + minor
  int target_sm = 0;  // .target sm_XY -> XY
  std::vector<PtxEntry> entries;
};

// What loading the text gave: CUDA_SUCCESS (0) and `out` filled, or the
// CUresult the driver answers with `error_log` saying why:
// CUDA_ERROR_UNSUPPORTED_PTX_VERSION (.version newer than `max_isa`),
// CUDA_ERROR_INVALID_PTX (anything else: not PTX, syntax, an instruction the
// ISA does not define, a .target the device `device_sm` cannot run). The
// log reads as ptxas writes it: "ptxas application ptx input, line N;
// error   : <what>" and "ptxas fatal   : Ptx assembly aborted due to errors".
int parse_ptx(const char* text, int max_isa, int device_sm, PtxModule& out, std::string& error_log);

// The newest PTX ISA (major * 10 + minor) a driver of `driver_version`
// (cuDriverGetVersion's 12080 form) loads, after the PTX ISA's release
// history: CUDA 11.x -> 7.x, 12.0-12.5 -> 8.0-8.5, 12.6 -> 8.5, 12.7 -> 8.6,
// 12.8 -> 8.7, 12.9 -> 8.8, 13.x -> 9.x (and later majors by that rule).
int max_ptx_isa(int driver_version);

}  // namespace fake_cuda
