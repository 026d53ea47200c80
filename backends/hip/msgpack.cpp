// MessagePack reading (msgpack.hpp): a recursive descent over the spec's
// format bytes, every read bounds-checked.
#include "msgpack.hpp"

#include <cstdio>
#include <cstring>

namespace accel::hip::msgpack {

namespace {

class Reader {
 public:
  Reader(const unsigned char* data, size_t size) : data_(data), size_(size) {}

  bool value(Value& v, int depth) {
    if (depth > kMaxDepth) return fail("nesting deeper than %d levels", kMaxDepth);
    if (++values_ > kMaxValues) return fail("more than %zu values", kMaxValues);
    uint8_t tag = 0;
    if (!byte(tag)) return false;
    if (tag <= 0x7f) return set_uint(v, tag);                                    // positive fixint
    if (tag >= 0xe0) return set_sint(v, static_cast<int8_t>(tag));               // negative fixint
    if ((tag & 0xf0) == 0x80) return map(v, tag & 0x0f, depth);                  // fixmap
    if ((tag & 0xf0) == 0x90) return array(v, tag & 0x0f, depth);                // fixarray
    if ((tag & 0xe0) == 0xa0) return bytes(v, Value::Type::string, tag & 0x1f);  // fixstr
    uint64_t n = 0;
    switch (tag) {
      case 0xc0:
        v.type = Value::Type::nil;
        return true;
      case 0xc2:
      case 0xc3:
        v.type = Value::Type::boolean;
        v.b = tag == 0xc3;
        return true;
      case 0xc4:
      case 0xc5:
      case 0xc6:  // bin 8/16/32
        return number(n, size_t{1} << (tag - 0xc4)) && bytes(v, Value::Type::binary, n);
      case 0xc7:
      case 0xc8:
      case 0xc9:  // ext 8/16/32: length, type byte, payload
        return number(n, size_t{1} << (tag - 0xc7)) && skip(1) && bytes(v, Value::Type::ext, n);
      case 0xca: {
        uint64_t bits = 0;
        if (!number(bits, 4)) return false;
        float f;
        const auto b32 = static_cast<uint32_t>(bits);
        std::memcpy(&f, &b32, sizeof f);
        v.type = Value::Type::floating;
        v.f = f;
        return true;
      }
      case 0xcb: {
        uint64_t bits = 0;
        if (!number(bits, 8)) return false;
        std::memcpy(&v.f, &bits, sizeof v.f);
        v.type = Value::Type::floating;
        return true;
      }
      case 0xcc:
      case 0xcd:
      case 0xce:
      case 0xcf:  // uint 8/16/32/64
        return number(n, size_t{1} << (tag - 0xcc)) && set_uint(v, n);
      case 0xd0:
      case 0xd1:
      case 0xd2:
      case 0xd3: {  // int 8/16/32/64, two's complement
        const size_t width = size_t{1} << (tag - 0xd0);
        if (!number(n, width)) return false;
        if (width < 8 && (n >> (width * 8 - 1)) != 0) n |= ~uint64_t{0} << (width * 8);
        return set_sint(v, static_cast<int64_t>(n));
      }
      case 0xd4:
      case 0xd5:
      case 0xd6:
      case 0xd7:
      case 0xd8:  // fixext 1/2/4/8/16: type byte, payload
        return skip(1) && bytes(v, Value::Type::ext, size_t{1} << (tag - 0xd4));
      case 0xd9:
      case 0xda:
      case 0xdb:  // str 8/16/32
        return number(n, size_t{1} << (tag - 0xd9)) && bytes(v, Value::Type::string, n);
      case 0xdc:
      case 0xdd:  // array 16/32
        return number(n, tag == 0xdc ? 2 : 4) && array(v, n, depth);
      case 0xde:
      case 0xdf:  // map 16/32
        return number(n, tag == 0xde ? 2 : 4) && map(v, n, depth);
      default:  // 0xc1: "never used"
        return fail("byte 0x%02x is no msgpack type", tag);
    }
  }

  size_t at() const noexcept { return at_; }
  std::string& error() noexcept { return error_; }

 private:
  template <typename... Args>
  bool fail(const char* fmt, Args... args) {
    char buf[160];
    std::snprintf(buf, sizeof buf, fmt, args...);
    error_ = std::string(buf) + " at byte " + std::to_string(at_);
    return false;
  }
  bool need(uint64_t n) {
    if (n > size_ - at_)
      return fail("truncated (%llu bytes needed, %zu left)", static_cast<unsigned long long>(n),
                  size_ - at_);
    return true;
  }
  bool byte(uint8_t& b) {
    if (!need(1)) return false;
    b = data_[at_++];
    return true;
  }
  bool skip(size_t n) {
    if (!need(n)) return false;
    at_ += n;
    return true;
  }
  // A big-endian unsigned number of `width` bytes.
  bool number(uint64_t& out, size_t width) {
    if (!need(width)) return false;
    out = 0;
    for (size_t k = 0; k < width; ++k) out = (out << 8) | data_[at_ + k];
    at_ += width;
    return true;
  }
  bool bytes(Value& v, Value::Type type, uint64_t n) {
    if (!need(n)) return false;
    v.type = type;
    v.s = std::string_view(reinterpret_cast<const char*>(data_ + at_), static_cast<size_t>(n));
    at_ += static_cast<size_t>(n);
    return true;
  }
  static bool set_uint(Value& v, uint64_t n) {
    v.type = Value::Type::uint;
    v.u = n;
    v.i = n <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(n) : INT64_MAX;
    return true;
  }
  static bool set_sint(Value& v, int64_t n) {
    v.type = Value::Type::sint;
    v.i = n;
    v.u = n >= 0 ? static_cast<uint64_t>(n) : 0;
    return true;
  }
  bool array(Value& v, uint64_t n, int depth) {
    if (!need(n)) return false;  // each item takes at least one byte
    if (n > kMaxValues - values_) return fail("more than %zu values", kMaxValues);
    v.type = Value::Type::array;
    v.items.resize(static_cast<size_t>(n));
    for (auto& item : v.items)
      if (!value(item, depth + 1)) return false;
    return true;
  }
  bool map(Value& v, uint64_t n, int depth) {
    if (n > (size_ - at_) / 2) return need(n * 2);  // each entry takes at least two bytes
    if (n * 2 > kMaxValues - values_) return fail("more than %zu values", kMaxValues);
    v.type = Value::Type::map;
    v.entries.resize(static_cast<size_t>(n));
    for (auto& [key, val] : v.entries)
      if (!value(key, depth + 1) || !value(val, depth + 1)) return false;
    return true;
  }

  const unsigned char* data_;
  size_t size_;
  size_t at_ = 0;
  size_t values_ = 0;
  std::string error_;
};

}  // namespace

const Value* Value::find(std::string_view key) const noexcept {
  if (type != Type::map) return nullptr;
  for (const auto& [k, v] : entries)
    if (k.type == Type::string && k.s == key) return &v;
  return nullptr;
}

bool Value::as_size(uint64_t& out) const noexcept {
  if (type == Type::uint || (type == Type::sint && i >= 0)) {
    out = u;
    return true;
  }
  return false;
}

bool parse(const unsigned char* data, size_t size, Value& out, size_t* used, std::string& error) {
  Reader r(data, size);
  out = Value{};
  if (!r.value(out, 0)) {
    error = std::move(r.error());
    return false;
  }
  if (used != nullptr) *used = r.at();
  return true;
}

}  // namespace accel::hip::msgpack
