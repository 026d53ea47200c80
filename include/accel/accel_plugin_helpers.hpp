// accel_plugin_helpers.hpp - header-only C++ helpers for writing a backend.
//
// Optional: a backend needs nothing but accel_plugin.h. These are the pieces
// every C++ backend otherwise writes again, each slightly differently: the
// host services behind one struct_size check, the exception guard every
// operation needs, one shape for vendor failures, loading the vendor library,
// and the entry point. plugins/skeleton shows them in use.
//
// Requirements: C++17 or later; POSIX dlopen (glibc 2.34+ has it in libc,
// older ones need -ldl when VendorLibrary is used). Links nothing of accel.
//
// Per-plugin state: the only state is the Host that ACCEL_PLUGIN_DEFINE_ENTRY
// defines inside the plugin, behind a hidden function. Nothing here is an
// inline variable or a static local of an inline function: GCC gives those
// process-wide (STB_GNU_UNIQUE) binding, and two plugins built from this
// header would then share one host table despite RTLD_LOCAL.
//
// Usage, in the plugin's one source file that defines the vtable:
//
//   #include <accel/accel_plugin_helpers.hpp>
//   namespace {
//   accel_status_t my_stream_query(accel_plugin_stream_t s) noexcept {
//     return accel::plugin::guarded("stream_query", [&] { ... });
//   }
//   constexpr accel_plugin_api_t kApi = {...};
//   }  // namespace
//   ACCEL_PLUGIN_DEFINE_ENTRY(kApi);
#ifndef ACCEL_ACCEL_PLUGIN_HELPERS_HPP
#define ACCEL_ACCEL_PLUGIN_HELPERS_HPP

#include <accel/accel_plugin.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <new>
#include <string>
#include <type_traits>
#include <utility>

#if defined(__GNUC__)
// Lets the compiler check printf-style calls against their arguments.
#define ACCEL_PLUGIN_PRINTF(fmt_index, first_arg) \
  __attribute__((format(printf, fmt_index, first_arg)))
// Keeps a symbol out of the plugin's dynamic symbol table even when the
// plugin is built without -fvisibility=hidden.
#define ACCEL_PLUGIN_HIDDEN __attribute__((visibility("hidden")))
#else
#define ACCEL_PLUGIN_PRINTF(fmt_index, first_arg)
#define ACCEL_PLUGIN_HIDDEN
#endif

// True when the struct `s` points to, whose first member is struct_size,
// holds `field` entirely. The core's structs grow by appending fields, so a
// plugin must write a field of e.g. accel_device_properties_t only when this
// says the caller's struct has it (the caller may be older than the plugin).
#define ACCEL_PLUGIN_HOLDS(s, field) \
  ((s)->struct_size >= offsetof(std::remove_pointer_t<decltype(s)>, field) + sizeof((s)->field))

namespace accel::plugin {

// Size arithmetic on values a caller passed (sizes, counts, offsets): each
// stores the exact result in *out and returns true, or returns false and
// leaves *out alone where the result does not fit in T. A plugin checks
// every such `a + b`, `a * b` and rounding before using it, and reports the
// operands rather than a wrapped result (docs/security.md, "Sizes").
template <typename T>
[[nodiscard]] constexpr bool checked_add(T a, T b, T* out) noexcept {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

template <typename T>
[[nodiscard]] constexpr bool checked_mul(T a, T b, T* out) noexcept {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) return false;
  *out = r;
  return true;
}

// `v` rounded up to a multiple of `align` (> 0).
template <typename T>
[[nodiscard]] constexpr bool checked_round_up(T v, T align, T* out) noexcept {
  T r{};
  if (!checked_add<T>(v, align - 1, &r)) return false;
  *out = r / align * align;
  return true;
}

namespace detail {

// printf into a std::string. Throws std::bad_alloc like any string; callers
// below catch it, so that reporting an error never becomes one.
ACCEL_PLUGIN_PRINTF(1, 0) inline std::string vformat(const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  char small[256];
  const int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return std::string(fmt);  // a broken format: show it rather than nothing
  if (static_cast<std::size_t>(n) < sizeof small)
    return std::string(small, static_cast<std::size_t>(n));
  std::string out(static_cast<std::size_t>(n) + 1, '\0');
  std::vsnprintf(&out[0], out.size(), fmt, ap);
  out.resize(static_cast<std::size_t>(n));
  return out;
}

}  // namespace detail

// printf into a std::string (may throw std::bad_alloc). Thread-safe.
ACCEL_PLUGIN_PRINTF(1, 2) inline std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s;
  try {
    s = detail::vformat(fmt, ap);
  } catch (...) {
    va_end(ap);
    throw;
  }
  va_end(ap);
  return s;
}

// The core's host services (accel_host_services_t), read safely.
//
// The core may be older than this header and hand a shorter table, or leave
// a member NULL: every use goes through one check of struct_size and NULL,
// and a missing service degrades to a no-op (log), false (log_enabled) or
// NULL (env) instead of a crash.
//
// Thread-safety: attach() is called by the entry point (under the core's
// discovery lock); every other member may be called from any thread at any
// time, also before attach() (then nothing is logged or reported). The
// core's services are themselves thread-safe. All members are noexcept.
class Host {
 public:
  constexpr Host() noexcept = default;
  Host(const Host&) = delete;
  Host& operator=(const Host&) = delete;

  // Remembers the core's table (valid until process exit). Called by the
  // entry point; calling it again replaces the table.
  void attach(const accel_host_services_t* table) noexcept {
    table_.store(table, std::memory_order_release);
  }
  // The table given to attach(), or NULL before it.
  const accel_host_services_t* table() const noexcept {
    return table_.load(std::memory_order_acquire);
  }

  // True if a message at `level` would be logged (ACCEL_LOG_LEVEL): lets a
  // plugin skip building expensive messages. False without a log service.
  bool log_enabled(accel_log_level_t level) const noexcept {
    const accel_host_services_t* t = table();
    if (service(t, &accel_host_services_t::log, kLogEnd) == nullptr) return false;
    auto enabled = service(t, &accel_host_services_t::log_enabled, kLogEnabledEnd);
    return enabled == nullptr || enabled(t, level) != 0;
  }

  // Logs `message` at `level` through the core's logger (it adds the backend
  // name). Never prints: plugins must not write to stdout or stderr.
  void log(accel_log_level_t level, const std::string& message) const noexcept {
    const accel_host_services_t* t = table();
    if (auto fn = service(t, &accel_host_services_t::log, kLogEnd)) fn(t, level, message.c_str());
  }
  // printf-style log(); formats only when the level is enabled. A message
  // that cannot be formatted (out of memory) is dropped.
  ACCEL_PLUGIN_PRINTF(3, 4) void log(accel_log_level_t level, const char* fmt, ...) const noexcept {
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
  }
  ACCEL_PLUGIN_PRINTF(3, 0)
  void vlog(accel_log_level_t level, const char* fmt, va_list ap) const noexcept {
    if (!log_enabled(level)) return;
    try {
      log(level, detail::vformat(fmt, ap));
    } catch (...) {
      // Logging must never turn into a failure of the operation.
    }
  }

  // Sets the calling thread's error detail for the failure the plugin is
  // about to return and returns `status`, so error paths read
  // `return host.set_error(ACCEL_ERROR_..., "...")`. The core prefixes the
  // backend name. With ACCEL_SUCCESS from init or device_count it explains a
  // device count of 0 (accelctl shows it as the backend's reason).
  accel_status_t set_error(accel_status_t status, const std::string& message) const noexcept {
    const accel_host_services_t* t = table();
    if (auto fn = service(t, &accel_host_services_t::set_error, kSetErrorEnd))
      fn(t, status, message.c_str());
    return status;
  }
  // set_error() with a printf-style message; the same status is returned.
  ACCEL_PLUGIN_PRINTF(3, 4)
  accel_status_t fail(accel_status_t status, const char* fmt, ...) const noexcept {
    va_list ap;
    va_start(ap, fmt);
    const accel_status_t st = vfail(status, fmt, ap);
    va_end(ap);
    return st;
  }
  accel_status_t fail(accel_status_t status, const std::string& message) const noexcept {
    return set_error(status, message);
  }
  ACCEL_PLUGIN_PRINTF(3, 0)
  accel_status_t vfail(accel_status_t status, const char* fmt, va_list ap) const noexcept {
    try {
      return set_error(status, detail::vformat(fmt, ap));
    } catch (...) {
      // The status still reaches the caller; only the detail is lost.
      const accel_host_services_t* t = table();
      if (auto fn = service(t, &accel_host_services_t::set_error, kSetErrorEnd))
        fn(t, status, "(out of memory while formatting the error message)");
      return status;
    }
  }

  // The configuration variable `name` through the core's secure_getenv:
  // NULL when unset, in setuid/setgid processes, or without the service.
  // Plugins read every variable through this, never getenv().
  const char* env(const char* name) const noexcept {
    const accel_host_services_t* t = table();
    auto fn = service(t, &accel_host_services_t::get_env, kGetEnvEnd);
    return fn != nullptr && name != nullptr ? fn(t, name) : nullptr;
  }

 private:
  // Where each member ends: the core's struct_size must reach it.
  static constexpr std::size_t kLogEnd =
      offsetof(accel_host_services_t, log) + sizeof(accel_host_services_t::log);
  static constexpr std::size_t kLogEnabledEnd =
      offsetof(accel_host_services_t, log_enabled) + sizeof(accel_host_services_t::log_enabled);
  static constexpr std::size_t kSetErrorEnd =
      offsetof(accel_host_services_t, set_error) + sizeof(accel_host_services_t::set_error);
  static constexpr std::size_t kGetEnvEnd =
      offsetof(accel_host_services_t, get_env) + sizeof(accel_host_services_t::get_env);

  // The one struct_size check: member `m` of `t` if the core's table is long
  // enough to hold it (end offset `end`), else NULL; NULL too when the core
  // left it NULL.
  template <typename Fn>
  static Fn service(const accel_host_services_t* t, Fn accel_host_services_t::*m,
                    std::size_t end) noexcept {
    if (t == nullptr || t->struct_size < end) return nullptr;
    return t->*m;
  }

  std::atomic<const accel_host_services_t*> table_{nullptr};
};

// This plugin's Host. Declared here, defined by ACCEL_PLUGIN_DEFINE_ENTRY in
// the plugin itself (hidden: every plugin has its own). The free functions
// below, guarded() and VendorLibrary use it. Thread-safe.
ACCEL_PLUGIN_HIDDEN Host& host() noexcept;

// host().log(...): see Host::log. Thread-safe, noexcept.
inline void log(accel_log_level_t level, const std::string& message) noexcept {
  host().log(level, message);
}
ACCEL_PLUGIN_PRINTF(2, 3) inline void log(accel_log_level_t level, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  host().vlog(level, fmt, ap);
  va_end(ap);
}
// host().log_enabled(level): see Host::log_enabled.
inline bool log_enabled(accel_log_level_t level) noexcept { return host().log_enabled(level); }

// host().fail(...): records the detail, returns `status`. See Host::fail.
ACCEL_PLUGIN_PRINTF(2, 3)
inline accel_status_t fail(accel_status_t status, const char* fmt, ...) noexcept {
  va_list ap;
  va_start(ap, fmt);
  const accel_status_t st = host().vfail(status, fmt, ap);
  va_end(ap);
  return st;
}
inline accel_status_t fail(accel_status_t status, const std::string& message) noexcept {
  return host().set_error(status, message);
}
// host().set_error(status, message): returns `status`.
inline accel_status_t set_error(accel_status_t status, const std::string& message) noexcept {
  return host().set_error(status, message);
}
// host().env(name): the variable through secure_getenv, or NULL.
inline const char* env(const char* name) noexcept { return host().env(name); }

// Runs the body of one ABI operation and turns any exception into a status,
// since nothing may unwind into the core's C frames:
//
//   accel_status_t my_stream_create(...) noexcept {
//     return accel::plugin::guarded("stream_create", [&] { ...; return ACCEL_SUCCESS; });
//   }
//
// Statuses: what `body` returns; ACCEL_ERROR_OUT_OF_MEMORY when it throws
// std::bad_alloc ("<op>: out of host memory"); ACCEL_ERROR_INTERNAL for any
// other exception ("<op>: unexpected exception: <what()>"). The message goes
// through host().set_error. Thread-safe as `body` is; noexcept.
template <typename Body>
accel_status_t guarded(const char* op, Body&& body) noexcept {
  static_assert(std::is_convertible<decltype(std::forward<Body>(body)()), accel_status_t>::value,
                "the body of guarded() must return an accel_status_t");
  try {
    return std::forward<Body>(body)();
  } catch (const std::bad_alloc&) {
    return host().fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: out of host memory", op);
  } catch (const std::exception& e) {
    return host().fail(ACCEL_ERROR_INTERNAL, "%s: unexpected exception: %s", op, e.what());
  } catch (...) {
    return host().fail(ACCEL_ERROR_INTERNAL, "%s: unexpected exception of a non-standard type", op);
  }
}

// The one shape of a vendor failure's detail:
//   "<vendor call> failed: <code name> (<code>): <text>"
// which accel_last_error() shows as "<backend>: cuMemAlloc failed:
// CUDA_ERROR_OUT_OF_MEMORY (2): out of memory" (the core adds the backend).
// A NULL code name or text reads "unknown code" / "no description". May
// throw std::bad_alloc.
inline std::string vendor_failure_message(const char* call, const char* code_name, long long code,
                                          const char* text) {
  return format("%s failed: %s (%lld): %s", call != nullptr ? call : "(vendor call)",
                code_name != nullptr ? code_name : "unknown code", code,
                text != nullptr ? text : "no description");
}

// Records vendor_failure_message(...) as the error detail and returns
// `status` (the caller maps the vendor code: ACCEL_ERROR_OUT_OF_MEMORY for
// exhaustion, ACCEL_ERROR_NOT_READY for "not ready", usually
// ACCEL_ERROR_BACKEND_FAILURE otherwise). `code` is the vendor's integer or
// enum code. Thread-safe, noexcept.
template <typename Code>
accel_status_t vendor_fail(accel_status_t status, const char* call, const char* code_name,
                           Code code, const char* text) noexcept {
  static_assert(std::is_integral<Code>::value || std::is_enum<Code>::value,
                "vendor_fail: the vendor code must be an integer or an enum");
  try {
    return host().set_error(
        status, vendor_failure_message(call, code_name, static_cast<long long>(code), text));
  } catch (...) {
    return host().set_error(status, "(out of memory while formatting a vendor failure)");
  }
}

// One row of a table of a vendor's result codes: what vendor_fail() shows
// where the vendor library cannot name or describe its own codes (a stub,
// a failed load, an API without an error-string call such as OpenCL):
//   constexpr accel::plugin::VendorCode kCodes[] = {
//       {CL_INVALID_VALUE, "CL_INVALID_VALUE", "an argument is not valid"}, ...};
struct VendorCode {
  long long code;
  const char* name;
  const char* text;
};

// The row of `code` in `table`, or NULL. A linear search: meant for error
// paths. Thread-safe, noexcept.
template <std::size_t N>
const VendorCode* find_vendor_code(const VendorCode (&table)[N], long long code) noexcept {
  for (const VendorCode& row : table)
    if (row.code == code) return &row;
  return nullptr;
}

// One symbol VendorLibrary::resolve looks up, and where it stores it. Make
// them with symbol(), which keeps the store type-safe:
//   CUresult (*cuInit)(unsigned) = nullptr;
//   const accel::plugin::Symbol kSymbols[] = {accel::plugin::symbol("cuInit", &cuInit)};
struct Symbol {
  const char* name;
  void* slot;  // the function pointer to fill
  void (*store)(void* slot, void* address);
  bool required;  // false: left NULL when absent
};

template <typename Fn>
Symbol symbol(const char* name, Fn* slot, bool required = true) noexcept {
  static_assert(std::is_pointer<Fn>::value && std::is_function<std::remove_pointer_t<Fn>>::value,
                "symbol(): the slot must be a function pointer");
  // POSIX guarantees dlsym's void* converts to a function pointer; memcpy
  // says so without the cast ISO C++ only conditionally supports.
  return Symbol{name, slot,
                [](void* s, void* address) {
                  Fn fn = nullptr;
                  static_assert(sizeof fn == sizeof address, "function and object pointers differ");
                  std::memcpy(&fn, &address, sizeof fn);
                  *static_cast<Fn*>(s) = fn;
                },
                required};
}

// A vendor library (libcuda.so.1, libze_loader.so.1, ...) loaded with
// dlopen(RTLD_NOW | RTLD_LOCAL): every symbol bound at once, so a broken
// install fails in init rather than mid-run, and none of them visible to
// other plugins. Open it from init, never from the entry; it is never
// closed (plugins are never unloaded, and vendor runtimes rarely survive
// dlclose).
//
// Thread-safety: open and resolve are meant for init (serialised by the
// core); handle() and path() may be read from any thread afterwards.
class VendorLibrary {
 public:
  VendorLibrary() = default;
  VendorLibrary(const VendorLibrary&) = delete;
  VendorLibrary& operator=(const VendorLibrary&) = delete;

  // Opens the library. If the configuration variable `override_var` (read
  // through host().env; may be NULL) is set and non-empty, exactly the file
  // it names is opened, and it must be an absolute path: a bare name would
  // be searched along LD_LIBRARY_PATH and the default paths, so the variable
  // would not say which file is loaded. Otherwise each of `names` (sonames,
  // most preferred first) is tried in turn. `what` names the library for
  // people ("the CUDA driver library").
  //
  // Statuses: ACCEL_SUCCESS; ACCEL_ERROR_BACKEND_UNAVAILABLE with the reason
  // through host().set_error (relative override refused, nothing could be
  // loaded: dlerror() included), so that init can return it as it is and
  // accelctl lists the backend as unavailable; ACCEL_ERROR_OUT_OF_MEMORY.
  accel_status_t open(const char* what, std::initializer_list<const char*> names,
                      const char* override_var) noexcept {
    try {
      const char* forced = override_var != nullptr ? host().env(override_var) : nullptr;
      if (forced != nullptr && *forced != '\0') {
        if (forced[0] != '/')
          return host().fail(ACCEL_ERROR_BACKEND_UNAVAILABLE,
                             "%s='%s' is not an absolute path; refused (name %s by its full path)",
                             override_var, forced, what);
        if (try_open(forced)) return ACCEL_SUCCESS;
        return host().fail(ACCEL_ERROR_BACKEND_UNAVAILABLE, "cannot load %s '%s' named by %s: %s",
                           what, forced, override_var, last_error_.c_str());
      }
      std::string tried;
      for (const char* name : names) {
        if (try_open(name)) return ACCEL_SUCCESS;
        tried += (tried.empty() ? "" : ", ") + std::string(name);
      }
      const std::string hint =
          override_var != nullptr
              ? "; install it, or set " + std::string(override_var) + " to the library's full path"
              : "";
      return host().fail(
          ACCEL_ERROR_BACKEND_UNAVAILABLE, "cannot load %s: tried %s (last dlopen error: %s)%s",
          what, tried.empty() ? "nothing" : tried.c_str(), last_error_.c_str(), hint.c_str());
    } catch (const std::bad_alloc&) {
      return host().fail(ACCEL_ERROR_OUT_OF_MEMORY, "loading %s: out of host memory", what);
    }
  }

  // Looks up every symbol in the opened library and stores it through its
  // slot; an absent optional symbol is stored as NULL.
  // Statuses: ACCEL_SUCCESS; ACCEL_ERROR_BACKEND_UNAVAILABLE with "missing
  // symbol X in <path>" (or "missing symbols X, Y in <path>") when required
  // ones are absent: a library too old, or not the vendor's; ACCEL_ERROR_
  // INVALID_ARGUMENT when nothing is open; ACCEL_ERROR_OUT_OF_MEMORY.
  accel_status_t resolve(const Symbol* symbols, std::size_t count) noexcept {
    if (handle_ == nullptr)
      return host().fail(ACCEL_ERROR_INVALID_ARGUMENT, "resolve: no vendor library is open");
    try {
      std::string missing;
      std::size_t n_missing = 0;
      for (std::size_t i = 0; i < count; ++i) {
        void* address = dlsym(handle_, symbols[i].name);
        symbols[i].store(symbols[i].slot, address);
        if (address == nullptr && symbols[i].required) {
          missing += (missing.empty() ? "" : ", ") + std::string(symbols[i].name);
          ++n_missing;
        }
      }
      if (n_missing == 0) return ACCEL_SUCCESS;
      return host().fail(ACCEL_ERROR_BACKEND_UNAVAILABLE, "missing symbol%s %s in %s",
                         n_missing > 1 ? "s" : "", missing.c_str(), path_.c_str());
    } catch (const std::bad_alloc&) {
      return host().fail(ACCEL_ERROR_OUT_OF_MEMORY, "resolve: out of host memory");
    }
  }
  template <std::size_t N>
  accel_status_t resolve(const Symbol (&symbols)[N]) noexcept {
    return resolve(symbols, N);
  }

  // dlopen's handle (NULL until open succeeded) and the name it was opened
  // by (the override's path, or the soname that loaded).
  void* handle() const noexcept { return handle_; }
  const char* path() const noexcept { return path_.c_str(); }

 private:
  bool try_open(const char* name) {
    dlerror();  // clear a stale message: dlerror reports the latest failure only
    void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* err = dlerror();
      last_error_ = err != nullptr ? err : "unknown dlopen error";
      return false;
    }
    handle_ = h;
    path_ = name;
    return true;
  }

  void* handle_ = nullptr;
  std::string path_;
  std::string last_error_ = "none";
};

namespace detail {

// The entry point's work (see ACCEL_PLUGIN_DEFINE_ENTRY).
inline const accel_plugin_api_t* enter(uint32_t abi_major, uint32_t abi_minor,
                                       const accel_host_services_t* table,
                                       const accel_plugin_api_t& api) noexcept {
  if (table == nullptr) return nullptr;  // the core always passes one; nobody to report to
  host().attach(table);
  if (abi_major != ACCEL_PLUGIN_ABI_MAJOR) {
    host().log(
        ACCEL_LOG_WARN, "%s plugin speaks backend ABI %u.%u; the core speaks %u.%u: declining",
        api.name != nullptr ? api.name : "this", ACCEL_PLUGIN_ABI_MAJOR, ACCEL_PLUGIN_ABI_MINOR,
        static_cast<unsigned>(abi_major), static_cast<unsigned>(abi_minor));
    return nullptr;
  }
  // An older or newer minor is fine: the core reads no member past our
  // struct_size, and Host reads none past the core's.
  return &api;
}

}  // namespace detail

}  // namespace accel::plugin

// Defines the plugin's entry point (accel_plugin_get_api) and its Host
// (accel::plugin::host()). Use it once per plugin, at global scope (outside
// any namespace), after the vtable `api` (an accel_plugin_api_t lvalue with
// static storage, e.g. a constexpr table in an anonymous namespace).
//
// The entry stores the core's host services for host(), then declines
// (returns NULL, logging both versions as a warning) a core whose
// ACCEL_PLUGIN_ABI_MAJOR differs from the one the plugin was built with;
// otherwise it returns &api. Called by the core once, under its discovery
// lock. Host's constexpr constructor makes the static below constant-
// initialised: no guard variable, no destructor at exit.
#define ACCEL_PLUGIN_DEFINE_ENTRY(api)                                                   \
  accel::plugin::Host& accel::plugin::host() noexcept {                                  \
    static accel::plugin::Host instance;                                                 \
    return instance;                                                                     \
  }                                                                                      \
  extern "C" ACCEL_PLUGIN_EXPORT const accel_plugin_api_t* ACCEL_PLUGIN_ENTRY(           \
      uint32_t abi_major, uint32_t abi_minor, const accel_host_services_t* host_table) { \
    return accel::plugin::detail::enter(abi_major, abi_minor, host_table, (api));        \
  }                                                                                      \
  static_assert(true, "ACCEL_PLUGIN_DEFINE_ENTRY is used with a trailing semicolon")

#endif  // ACCEL_ACCEL_PLUGIN_HELPERS_HPP
