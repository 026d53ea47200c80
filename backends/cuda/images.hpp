// The checks module_load makes on an image before the driver sees it: the
// magic and the sizes the header promises, so a wrong or cut image is the
// caller's mistake (ACCEL_ERROR_INVALID_ARGUMENT, saying what is wrong)
// rather than a driver error, or a driver read past the buffer (the driver
// takes no size: cuModuleLoadDataEx reads an ELF or fat binary as far as
// its header says, and PTX up to its NUL). Pure functions: no driver, no
// accel state; unit-tested in tests/backends/cuda/images_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace accel::cuda {

enum class ImageKind { ptx, cubin, fatbin };

// "" when `size` bytes at `data` (size > 0) look like an image of `kind`,
// else why not, for people:
//   ptx     text holding ".version" and ".target" (the directives every PTX
//           module starts with, PTX ISA "PTX Module Directives"), with no
//           NUL byte before the end other than a terminating run of NULs;
//   cubin   an ELF64 little-endian file for EM_CUDA (190) whose section and
//           program header tables lie inside the image;
//   fatbin  the fat binary header (magic 0xBA55ED50, then a 16-bit version,
//           a 16-bit header size and a 64-bit payload size, little-endian)
//           with header size + payload size inside the image.
// May throw std::bad_alloc. Thread-safe.
std::string image_problem(ImageKind kind, const unsigned char* data, size_t size);

// Whether a PTX image that passed image_problem lacks the terminating NUL
// cuModuleLoadDataEx needs (accel.h lets text images go without one): the
// caller then hands the driver a NUL-terminated copy.
bool ptx_needs_terminator(const unsigned char* data, size_t size) noexcept;

// The parameter types of each `.entry` of a PTX image, by kernel name, as
// accel_plugin_kernel_param_t.type values (PTX ISA, "Kernel Function
// Parameters" and "Fundamental Types"): .f16/.f32/.f64 FLOAT; .s8...s64,
// .u8...u32 and .pred INT; .u64 POINTER when it carries the .ptr attribute,
// else UNKNOWN (nvcc writes pointers and 64-bit integers alike as .u64);
// .b8...b64 UNKNOWN (bit types hold any kind); an array (`.align N .b8
// name[M]`, a struct passed by value) STRUCT. An entry the scanner cannot
// read is left out (its parameters then have only sizes). Comments are
// skipped. May throw std::bad_alloc. Thread-safe.
std::map<std::string, std::vector<uint32_t>> ptx_param_types(const char* text, size_t size);

}  // namespace accel::cuda
