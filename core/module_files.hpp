// Kernel image files for accel_module_load_file: reading one whole and
// telling its format from its bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "accel/accel.h"

namespace accel::core {

// One file as accel_module_load_file saw it: its bytes and format, or why
// it is not used (`skipped` non-empty: it could not be read, is empty or is
// not a kernel image).
struct ModuleFile {
  std::string path;
  std::vector<unsigned char> bytes;
  accel_module_format_t format = ACCEL_MODULE_FORMAT_OPENCL_C;
  std::string skipped;
};

// Sets `format` to the format of the image `data` holds (the rules are at
// accel_module_load_file in accel.h); false when it is none of them.
bool detect_module_format(const unsigned char* data, size_t size, accel_module_format_t& format);

// Reads the file at `path` whole and tells its format. Never throws for a
// missing or unreadable file: `skipped` says why (strerror's text).
ModuleFile read_module_file(const char* path);

}  // namespace accel::core
