// The fake driver's PTX reader (fake_ptx.hpp). Grammar after NVIDIA's "PTX
// ISA" reference: a module starts with .version, then .target and an
// optional .address_size; module scope holds .entry and .func definitions,
// variable declarations in a state space (.global, .const, .shared, .local),
// linking directives (.visible, .extern, .weak, .common), .file, .section
// and .pragma. Comments are C++-style (// and /* */). A body is read
// statement by statement: its .reg, .shared and .local declarations are
// counted, and each instruction's opcode must be one the ISA defines (its
// operands are not read). Errors are reported in ptxas's words ("ptxas
// application ptx input, line N; error   : ...").
#include "fake_ptx.hpp"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include <cuda.h>

namespace fake_cuda {

namespace {

struct Token {
  std::string text;
  int line = 0;
  char kind = 0;  // 'w' word or directive, 'n' number, 's' string, 'p' punctuation
};

bool word_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}
bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' ||
         c == '.';
}

// Splits the text into tokens; false (with `error`) on an unterminated
// comment or string.
bool tokenize(const char* text, std::vector<Token>& out, std::string& error, int& error_line) {
  int line = 1;
  const char* p = text;
  while (*p != '\0') {
    const char c = *p;
    if (c == '\n') {
      ++line;
      ++p;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      ++p;
    } else if (c == '/' && p[1] == '/') {
      while (*p != '\0' && *p != '\n') ++p;
    } else if (c == '/' && p[1] == '*') {
      const int start = line;
      p += 2;
      while (*p != '\0' && !(p[0] == '*' && p[1] == '/')) {
        if (*p == '\n') ++line;
        ++p;
      }
      if (*p == '\0') {
        error = "unterminated comment";
        error_line = start;
        return false;
      }
      p += 2;
    } else if (c == '"') {
      const char* s = ++p;
      while (*p != '\0' && *p != '"' && *p != '\n') ++p;
      if (*p != '"') {
        error = "unterminated string";
        error_line = line;
        return false;
      }
      out.push_back(Token{std::string(s, p), line, 's'});
      ++p;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      const char* s = p;
      while (std::isalnum(static_cast<unsigned char>(*p)) || *p == '.') ++p;
      out.push_back(Token{std::string(s, p), line, 'n'});
    } else if (word_start(c)) {
      const char* s = p;
      while (word_char(*p)) ++p;
      out.push_back(Token{std::string(s, p), line, 'w'});
    } else {
      out.push_back(Token{std::string(1, c), line, 'p'});
      ++p;
    }
  }
  return true;
}

// Bytes of a fundamental type (PTX ISA "Fundamental Types"); 0: not one.
size_t type_size(const std::string& t) {
  static const std::map<std::string, size_t> sizes = {
      {".b8", 1},    {".u8", 1},     {".s8", 1},   {".b16", 2},  {".u16", 2}, {".s16", 2},
      {".f16", 2},   {".bf16", 2},   {".b32", 4},  {".u32", 4},  {".s32", 4}, {".f32", 4},
      {".f16x2", 4}, {".bf16x2", 4}, {".tf32", 4}, {".b64", 8},  {".u64", 8}, {".s64", 8},
      {".f64", 8},   {".b128", 16},  {".e4m3", 1}, {".e5m2", 1},
  };
  auto it = sizes.find(t);
  return it == sizes.end() ? 0 : it->second;
}

// The instruction names of the PTX ISA ("Instructions", by section), what
// comes before an instruction's first '.'; anything else is not PTX.
constexpr const char* kOpcodes[] = {
    // Integer and extended-precision integer arithmetic.
    "add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi "
    "szext bmsk dp4a dp2a addc subc madc",
    // Floating point (and half precision), comparison and selection.
    "testp copysign fma rcp sqrt rsqrt sin cos lg2 ex2 tanh set setp selp slct",
    // Logic and shift.
    "and or xor not cnot lop3 shf shl shr",
    // Data movement and conversion.
    "mov shfl prmt ld ldu st multimem prefetch prefetchu applypriority discard createpolicy "
    "isspacep cvta cvt mapa getctarank cp tensormap ldmatrix stmatrix movmatrix alloca "
    "stacksave stackrestore",
    // Texture and surface.
    "tex tld4 txq istypep suld sust sured suq",
    // Control flow.
    "bra brx call ret exit",
    // Parallel synchronization and communication.
    "bar barrier elect membar fence atom red vote match activemask redux griddepcontrol "
    "mbarrier nanosleep setmaxnreg clusterlaunchcontrol",
    // Warp- and warpgroup-level matrix multiply-accumulate, 5th-generation tensor cores.
    "wmma mma wgmma tcgen05",
    // Video (scalar and SIMD).
    "vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 "
    "vset2 vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4",
    // Miscellaneous.
    "trap brkpt pmevent",
};

bool known_opcode(const std::string& op) {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    for (const char* group : kOpcodes) {
      for (const char* p = group; *p != '\0';) {
        const char* end = std::strchr(p, ' ');
        if (end == nullptr) end = p + std::strlen(p);
        out.emplace(p, end);
        p = *end == ' ' ? end + 1 : end;
      }
    }
    return out;
  }();
  return names.count(op) != 0;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_isa, int device_sm)
      : t_(std::move(tokens)), max_isa_(max_isa), device_sm_(device_sm) {}

  // CUDA_SUCCESS, or the failure with error_ / error_line_ set.
  CUresult parse(PtxModule& out) {
    if (!header(out)) return status_;
    while (i_ < t_.size()) {
      if (!module_statement(out)) return status_;
    }
    return CUDA_SUCCESS;
  }

  const std::string& error() const { return error_; }
  int error_line() const { return error_line_; }

 private:
  bool at_end() const { return i_ >= t_.size(); }
  const Token& peek() const { return t_[i_]; }
  bool peek_is(const char* text) const { return !at_end() && t_[i_].text == text; }
  int line() const { return at_end() ? (t_.empty() ? 1 : t_.back().line) : t_[i_].line; }

  bool fail(const std::string& message, CUresult status = CUDA_ERROR_INVALID_PTX) {
    if (error_.empty()) {
      error_ = message;
      error_line_ = line();
      status_ = status;
    }
    return false;
  }
  bool expect(const char* text) {
    if (peek_is(text)) {
      ++i_;
      return true;
    }
    return fail(std::string("expected '") + text + "', found " + found());
  }
  std::string found() const { return at_end() ? "end of file" : "'" + peek().text + "'"; }

  // A decimal number; false if the next token is not one.
  bool number(long long& v) {
    if (at_end() || peek().kind != 'n') return fail("expected a number, found " + found());
    const std::string& s = peek().text;
    char* end = nullptr;
    v = std::strtoll(s.c_str(), &end, 0);
    if (end == nullptr || *end != '\0') return fail("'" + s + "' is not an integer");
    ++i_;
    return true;
  }

  // .version M.m, .target sm_XY[, option]*, [.address_size 64]
  bool header(PtxModule& out) {
    if (at_end()) return fail("empty input: a PTX module starts with .version");
    if (!peek_is(".version")) return fail("a PTX module starts with .version, found " + found());
    ++i_;
    if (at_end() || peek().kind != 'n') return fail("expected a version after .version");
    int major = 0, minor = 0;
    char dot = 0, extra = 0;
    if (std::sscanf(peek().text.c_str(), "%d%c%d%c", &major, &dot, &minor, &extra) != 3 ||
        dot != '.' || minor < 0 || minor > 9)
      return fail("'" + peek().text + "' is not a PTX ISA version");
    out.isa = major * 10 + minor;
    if (out.isa > max_isa_) {
      char msg[160];
      std::snprintf(msg, sizeof msg,
                    "Unsupported .version %d.%d; this driver supports PTX ISA %d.%d and older",
                    major, minor, max_isa_ / 10, max_isa_ % 10);
      return fail(msg, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    }
    ++i_;
    if (!expect(".target")) return false;
    bool have_sm = false;
    while (true) {
      if (at_end() || peek().kind != 'w') return fail("expected a target, found " + found());
      const std::string target = peek().text;
      if (target.compare(0, 3, "sm_") == 0) {
        if (!sm_target(target, out)) return false;
        have_sm = true;
      } else if (target != "texmode_unified" && target != "texmode_independent" &&
                 target != "debug" && target != "map_f64_to_f32") {
        return fail("unknown target '" + target + "'");
      }
      ++i_;
      if (!peek_is(",")) break;
      ++i_;
    }
    if (!have_sm) return fail(".target names no sm_XY architecture");
    if (peek_is(".address_size")) {
      ++i_;
      long long bits = 0;
      if (!number(bits)) return false;
      if (bits != 64) return fail(".address_size 32 is not supported on this platform");
    }
    return true;
  }

  // sm_XY, sm_XYa (exactly that architecture), sm_XYf (that family).
  bool sm_target(const std::string& target, PtxModule& out) {
    size_t k = 3;
    int sm = 0;
    while (k < target.size() && std::isdigit(static_cast<unsigned char>(target[k])))
      sm = sm * 10 + (target[k++] - '0');
    const std::string suffix = target.substr(k);
    if (k == 3 || (suffix != "" && suffix != "a" && suffix != "f"))
      return fail("'" + target + "' is not a target architecture");
    char msg[200];
    bool ok = sm <= device_sm_;
    if (suffix == "a") ok = sm == device_sm_;
    if (suffix == "f") ok = sm <= device_sm_ && sm / 10 == device_sm_ / 10;
    if (!ok) {
      std::snprintf(msg, sizeof msg,
                    "SM version specified by .target (%s) cannot run on this device (sm_%d)",
                    target.c_str(), device_sm_);
      return fail(msg);
    }
    out.target_sm = sm;
    return true;
  }

  bool module_statement(PtxModule& out) {
    bool is_extern = false;
    while (peek_is(".visible") || peek_is(".extern") || peek_is(".weak") || peek_is(".common")) {
      if (peek().text == ".extern") is_extern = true;
      ++i_;
      if (at_end()) return fail("unexpected end of file after a linking directive");
    }
    const std::string& d = peek().text;
    if (d == ".entry") return entry(out);
    if (d == ".func") return func();
    if (d == ".global" || d == ".const" || d == ".shared" || d == ".local") {
      const bool shared = d == ".shared";
      std::string name;
      size_t bytes = 0;
      if (!variable(name, bytes)) return false;
      if (shared && !is_extern) module_shared_[name] = bytes;
      return true;
    }
    if (d == ".file") {  // .file N "name" [, timestamp, size]
      ++i_;
      long long n = 0;
      if (!number(n)) return false;
      if (at_end() || peek().kind != 's') return fail("expected a file name after .file");
      ++i_;
      while (peek_is(",")) {
        ++i_;
        if (!number(n)) return false;
      }
      return true;
    }
    if (d == ".section") {  // .section name { ... }
      ++i_;
      while (!at_end() && !peek_is("{")) ++i_;
      return braces();
    }
    if (d == ".pragma") {
      ++i_;
      if (at_end() || peek().kind != 's') return fail("expected a string after .pragma");
      ++i_;
      return expect(";");
    }
    return fail("unexpected " + found() + " at module scope");
  }

  // [.align N] [.vN] .type name[dims]* [= initializer] ;  (the state space
  // is the current token). `bytes`: the variable's size, 0 when unsized.
  bool variable(std::string& name, size_t& bytes) {
    ++i_;  // state space
    size_t elem = 0, vec = 1;
    while (!at_end() && peek().kind == 'w' && peek().text[0] == '.') {
      const std::string& w = peek().text;
      if (w == ".align") {
        ++i_;
        long long a = 0;
        if (!number(a)) return false;
        continue;
      }
      if (w == ".v2" || w == ".v4" || w == ".v8")
        vec = static_cast<size_t>(w[2] - '0');
      else if (size_t s = type_size(w); s != 0)
        elem = s;
      else if (w != ".ptr" && w != ".global" && w != ".const" && w != ".local" && w != ".shared")
        return fail("unknown qualifier '" + w + "' in a variable declaration");
      ++i_;
    }
    if (elem == 0) return fail("a variable declaration needs a type, found " + found());
    if (at_end() || peek().kind != 'w') return fail("expected a variable name, found " + found());
    name = peek().text;
    ++i_;
    bytes = elem * vec;
    while (peek_is("[")) {
      ++i_;
      if (peek_is("]")) {
        bytes = 0;  // unsized: only with .extern (dynamic shared memory)
      } else {
        long long n = 0;
        if (!number(n) || n < 0) return fail("bad array size");
        bytes *= static_cast<size_t>(n);
      }
      if (!expect("]")) return false;
    }
    if (peek_is("<")) {  // a parameterised name: name<N> declares N of them
      ++i_;
      long long n = 0;
      if (!number(n) || n < 0) return false;
      bytes *= static_cast<size_t>(n);
      if (!expect(">")) return false;
    }
    if (peek_is("=")) {
      while (!at_end() && !peek_is(";")) ++i_;
    }
    return expect(";");
  }

  // Skips a balanced { ... } starting at the current '{'.
  bool braces() {
    if (!expect("{")) return false;
    int depth = 1;
    while (!at_end() && depth > 0) {
      if (peek_is("{")) ++depth;
      if (peek_is("}")) --depth;
      ++i_;
    }
    if (depth != 0) return fail("unexpected end of file: missing '}'");
    return true;
  }

  // .func [(ret)] name [(params)] [directives] { body } | ;
  // A device function's body is read as a kernel's is (its instructions
  // checked), its resources not kept: it is no kernel.
  bool func() {
    ++i_;
    if (peek_is("(") && !parens()) return false;
    if (at_end() || peek().kind != 'w') return fail("expected a function name, found " + found());
    PtxEntry f;
    f.name = peek().text;
    ++i_;
    if (peek_is("(") && !parens()) return false;
    while (!at_end() && !peek_is("{") && !peek_is(";")) ++i_;
    if (peek_is(";")) {
      ++i_;
      return true;
    }
    return body(f);
  }

  bool parens() {
    if (!expect("(")) return false;
    int depth = 1;
    while (!at_end() && depth > 0) {
      if (peek_is("(")) ++depth;
      if (peek_is(")")) --depth;
      ++i_;
    }
    if (depth != 0) return fail("unexpected end of file: missing ')'");
    return true;
  }

  // .param [.align A] .type [.ptr .space [.align N]] name[[N]]
  bool param(PtxEntry& e, size_t& offset) {
    if (!expect(".param")) return false;
    PtxParam p;
    size_t elem = 0, align = 0;
    bool after_ptr = false;
    while (!at_end() && peek().kind == 'w' && peek().text[0] == '.') {
      const std::string& w = peek().text;
      if (w == ".align") {
        ++i_;
        long long a = 0;
        if (!number(a)) return false;
        if (a <= 0 || (a & (a - 1)) != 0) return fail("alignment must be a power of two");
        if (!after_ptr) align = static_cast<size_t>(a);  // .ptr's .align is the pointee's
        continue;
      }
      if (w == ".ptr") {
        after_ptr = true;
      } else if (size_t s = type_size(w); s != 0) {
        elem = s;
      } else if (w != ".global" && w != ".const" && w != ".local" && w != ".shared") {
        return fail("unknown qualifier '" + w + "' in a kernel parameter");
      }
      ++i_;
    }
    if (elem == 0) return fail("a kernel parameter needs a type, found " + found());
    if (at_end() || peek().kind != 'w') return fail("expected a parameter name, found " + found());
    p.name = peek().text;
    ++i_;
    size_t count = 1;
    if (peek_is("[")) {
      ++i_;
      long long n = 0;
      if (!number(n) || n <= 0) return fail("a kernel parameter array needs a size");
      count = static_cast<size_t>(n);
      if (!expect("]")) return false;
    }
    p.size = elem * count;
    p.align = align != 0 ? align : elem;
    offset = (offset + p.align - 1) / p.align * p.align;
    p.offset = offset;
    offset += p.size;
    e.params.push_back(p);
    return true;
  }

  // Up to three extents after .maxntid / .reqntid; their product.
  bool extents(int dims[3], long long& product) {
    product = 1;
    for (int k = 0; k < 3; ++k) {
      long long v = 0;
      if (!number(v) || v <= 0) return fail("a thread count must be positive");
      dims[k] = static_cast<int>(v);
      product *= v;
      if (!peek_is(",")) return true;
      ++i_;
    }
    return fail("at most three extents");
  }

  bool entry(PtxModule& out) {
    PtxEntry e;
    e.first_line = line();
    ++i_;
    if (at_end() || peek().kind != 'w') return fail("expected a kernel name, found " + found());
    e.name = peek().text;
    ++i_;
    for (const PtxEntry& other : out.entries)
      if (other.name == e.name) return fail("duplicate definition of '" + e.name + "'");
    if (peek_is("(")) {
      ++i_;
      size_t offset = 0;
      if (!peek_is(")")) {
        while (true) {
          if (!param(e, offset)) return false;
          if (!peek_is(",")) break;
          ++i_;
        }
      }
      if (!expect(")")) return false;
    }
    while (!at_end() && !peek_is("{") && !peek_is(";")) {
      const std::string d = peek().text;
      ++i_;
      int dims[3] = {1, 1, 1};
      long long product = 0;
      if (d == ".maxntid" || d == ".reqntid") {
        if (!extents(dims, product)) return false;
        if (product > 1024) return fail(d + " asks for more than 1024 threads");
        e.max_threads = static_cast<int>(product);
        if (d == ".reqntid")
          for (int k = 0; k < 3; ++k) e.reqntid[k] = dims[k];
      } else if (d == ".minnctapersm" || d == ".maxnctapersm" || d == ".maxnreg" ||
                 d == ".maxclusterrank") {
        long long v = 0;
        if (!number(v)) return false;
      } else if (d == ".reqnctapercluster") {
        if (!extents(dims, product)) return false;
      } else if (d == ".noreturn" || d == ".explicitcluster") {
      } else if (d == ".pragma") {
        if (at_end() || peek().kind != 's') return fail("expected a string after .pragma");
        ++i_;
        if (!expect(";")) return false;
      } else {
        --i_;
        return fail("unexpected " + found() + " before the body of '" + e.name + "'");
      }
    }
    if (peek_is(";")) return fail("a kernel (.entry " + e.name + ") needs a body");
    if (!body(e)) return false;
    out.entries.push_back(std::move(e));
    return true;
  }

  // { ... }: statement by statement (PTX ISA "Statements"): labels
  // (`name:`), nested blocks, directives (.reg, .shared and .local counted;
  // .loc runs to the end of its line, the others to their ';') and
  // instructions, each `[@[!]pred] opcode[.modifier]* operands ;` with an
  // opcode the ISA defines (an unknown one is refused as ptxas refuses it);
  // module-scope .shared variables the body names are counted too.
  bool body(PtxEntry& e) {
    if (!expect("{")) return false;
    int depth = 1;
    std::set<std::string> named;
    size_t regs = 0;
    while (!at_end() && depth > 0) {
      const Token& tok = peek();
      if (tok.text == "{") {
        ++depth;
        ++i_;
      } else if (tok.text == "}") {
        --depth;
        ++i_;
      } else if (tok.text == ";") {
        ++i_;  // an empty statement
      } else if (tok.text == ".reg") {
        if (!registers(regs)) return false;
      } else if (tok.text == ".shared" || tok.text == ".local") {
        const bool shared = tok.text == ".shared";
        std::string name;
        size_t bytes = 0;
        if (!variable(name, bytes)) return false;
        (shared ? e.static_shared : e.local_bytes) += bytes;
      } else if (tok.text == ".loc") {
        const int at = tok.line;
        while (!at_end() && peek().line == at) ++i_;
      } else if (tok.kind == 'w' && tok.text[0] == '.') {
        if (!to_semicolon(named)) return false;
      } else if (tok.kind == 'w' && i_ + 1 < t_.size() && t_[i_ + 1].text == ":") {
        i_ += 2;  // a label
      } else if (tok.kind == 'w' || tok.text == "@") {
        if (!instruction(named)) return false;
      } else {
        return fail("syntax error at " + found());
      }
    }
    if (depth != 0) return fail("unexpected end of file: '" + e.name + "' has no closing '}'");
    for (const std::string& n : named) e.static_shared += module_shared_[n];
    e.registers = static_cast<int>(regs > 255 ? 255 : regs);
    return true;
  }

  // `[@[!]pred] opcode[.modifier]* operands ;`
  bool instruction(std::set<std::string>& named) {
    if (peek_is("@")) {
      ++i_;
      if (peek_is("!")) ++i_;
      if (at_end() || peek().kind != 'w') return fail("expected a predicate after '@'");
      ++i_;
    }
    if (at_end() || peek().kind != 'w' || peek().text[0] == '.')
      return fail("expected an instruction, found " + found());
    const std::string& word = peek().text;
    const std::string opcode = word.substr(0, word.find('.'));
    if (!known_opcode(opcode)) return fail("Not a name of any known instruction: '" + opcode + "'");
    return to_semicolon(named);
  }

  // Skips to the ';' ending the statement, noting module-scope .shared
  // variables named on the way.
  bool to_semicolon(std::set<std::string>& named) {
    while (!at_end() && !peek_is(";")) {
      if (peek_is("{") || peek_is("}")) {
        // A vector operand ({%f1, %f2}) is balanced within its statement.
        if (peek_is("}")) return fail("unexpected '}': missing ';' before it");
        while (!at_end() && !peek_is("}") && !peek_is(";")) ++i_;
        if (!peek_is("}")) return fail("missing '}' in a vector operand");
      } else if (peek().kind == 'w' && module_shared_.count(peek().text) != 0) {
        named.insert(peek().text);
      }
      ++i_;
    }
    return expect(";");
  }

  // .reg [.vN] .type %a<N> | %a, %b ;  -> 32-bit slots (predicates: none)
  bool registers(size_t& slots) {
    ++i_;
    size_t elem = 0, vec = 1;
    bool pred = false;
    while (!at_end() && peek().kind == 'w' && peek().text[0] == '.') {
      const std::string& w = peek().text;
      if (w == ".pred")
        pred = true;
      else if (w == ".v2" || w == ".v4")
        vec = static_cast<size_t>(w[2] - '0');
      else if (size_t s = type_size(w); s != 0)
        elem = s;
      else
        return fail("unknown register type '" + w + "'");
      ++i_;
    }
    if (!pred && elem == 0) return fail("a register declaration needs a type");
    const size_t per = pred ? 0 : (elem * vec + 3) / 4;
    while (true) {
      if (at_end() || peek().kind != 'w') return fail("expected a register name, found " + found());
      ++i_;
      size_t n = 1;
      if (peek_is("<")) {
        ++i_;
        long long v = 0;
        if (!number(v) || v < 0) return false;
        n = static_cast<size_t>(v);
        if (!expect(">")) return false;
      }
      slots += n * per;
      if (!peek_is(",")) break;
      ++i_;
    }
    return expect(";");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int max_isa_;
  int device_sm_;
  std::map<std::string, size_t> module_shared_;
  std::string error_;
  int error_line_ = 0;
  CUresult status_ = CUDA_ERROR_INVALID_PTX;
};

std::string error_log(int line, const std::string& message) {
  char head[64];
  std::snprintf(head, sizeof head, "ptxas application ptx input, line %d; error   : ", line);
  return head + message + "\nptxas fatal   : Ptx assembly aborted due to errors\n";
}

}  // namespace

int max_ptx_isa(int driver_version) {
  const int major = driver_version / 1000;
  const int minor = (driver_version % 1000) / 10;
  if (major == 12 && minor >= 6) return 80 + (minor - 1);  // 12.6 kept 8.5
  return (major - 4) * 10 + minor;
}

int parse_ptx(const char* text, int max_isa, int device_sm, PtxModule& out,
              std::string& error_log_out) {
  std::vector<Token> tokens;
  std::string error;
  int line = 0;
  if (!tokenize(text, tokens, error, line)) {
    error_log_out = error_log(line, error);
    return CUDA_ERROR_INVALID_PTX;
  }
  Parser parser(std::move(tokens), max_isa, device_sm);
  PtxModule module;
  CUresult rc = parser.parse(module);
  if (rc != CUDA_SUCCESS) {
    error_log_out = error_log(parser.error_line(), parser.error());
    return rc;
  }
  out = std::move(module);
  return CUDA_SUCCESS;
}

}  // namespace fake_cuda
