// A small MessagePack reader for the AMDGPU metadata note of a code object
// (code object v3 and later store their kernel metadata as one msgpack map:
// LLVM's AMDGPUUsage, "Code Object V3 Metadata"). Pure: no HIP, no accel
// state, unit-tested (tests/backends/hip/code_object_test.cpp).
//
// The input comes from the caller's image, so it is untrusted: every length
// is checked against the bytes left, nesting is limited to kMaxDepth, and a
// header claiming more items than bytes remain is refused before anything is
// reserved (each item takes at least one byte). Types per the msgpack spec
// (github.com/msgpack/msgpack/blob/master/spec.md): nil, bool, integers,
// floats, str, bin, array, map and ext (kept as an opaque value).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace accel::hip::msgpack {

// Deeper documents are refused (the AMDGPU metadata nests four levels).
inline constexpr int kMaxDepth = 32;
// Documents of more values are refused, which bounds the memory a hostile
// image can make the reader take (about 100 bytes a value). Code objects
// with thousands of kernels stay far below it.
inline constexpr size_t kMaxValues = size_t{1} << 21;

struct MapEntry;

struct Value {
  enum class Type { nil, boolean, uint, sint, floating, string, binary, array, map, ext };
  Type type = Type::nil;
  bool b = false;
  uint64_t u = 0;  // uint; also a sint >= 0
  int64_t i = 0;   // sint; also a uint <= INT64_MAX
  double f = 0;
  std::string_view s;        // string, binary, ext payload: points into the input
  std::vector<Value> items;  // array
  // A map's entries, in document order. MapEntry, not std::pair<Value, Value>:
  // a pair of an incomplete type is ill-formed (libstdc++'s pair checks its
  // members while Value is still being defined; clang rejects it).
  std::vector<MapEntry> entries;

  // The value of the first map entry whose key is the string `key`, or
  // nullptr (also when this is no map).
  const Value* find(std::string_view key) const noexcept;
  // A non-negative integer that fits `out`.
  bool as_size(uint64_t& out) const noexcept;
  bool is_string() const noexcept { return type == Type::string; }
};

struct MapEntry {
  Value key;
  Value value;
};

// Reads one value from the start of [data, data + size). On success sets
// *used to the bytes it took (trailing bytes are the caller's business).
// False with `error` saying what and where (byte offset) for anything
// truncated, malformed (0xc1, the never-used byte), too deep or with more
// than kMaxValues values. Throws only
// std::bad_alloc.
bool parse(const unsigned char* data, size_t size, Value& out, size_t* used, std::string& error);

}  // namespace accel::hip::msgpack
