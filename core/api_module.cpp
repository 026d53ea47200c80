// Modules and kernels (ABI 1.2): load the first image the device takes,
// look kernels up by name, launch them with arguments passed at launch.
#include <algorithm>
#include <span>
#include <string>
#include <thread>

#include "checks.hpp"
#include "graph.hpp"
#include "guard.hpp"
#include "host_services.hpp"
#include "kernel_args.hpp"
#include "module.hpp"
#include "module_files.hpp"
#include "plugin_groups.hpp"
#include "stream_sanitizer.hpp"

using namespace accel::core;

namespace {

// Static storage (zero pages until used), never destroyed: handles outlive
// exit, and the chunks they point into keep every object reachable.
constinit SlotTable<accel_module_s> g_modules;
constinit SlotTable<accel_kernel_s> g_kernels;

constexpr const char* kFormatNames[] = {"ptx",   "cubin",    "fatbin",        "amd_code_object",
                                        "spirv", "opencl_c", "native_binary", "sim_host"};
static_assert(std::size(kFormatNames) == ACCEL_MODULE_FORMAT_COUNT,
              "ACCEL_MODULE_FORMAT_COUNT must count the format names");

std::string format_list(uint64_t mask) {
  std::string out;
  for (unsigned f = 0; f < ACCEL_MODULE_FORMAT_COUNT; ++f) {
    if ((mask & ACCEL_MODULE_FORMAT_BIT(f)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += kFormatNames[f];
  }
  return out.empty() ? "none" : out;
}

// The current accelerator, ready, with the modules group and `device` resolved.
accel_status_t module_device(const char* fn, int32_t device, Backend*& b, int32_t& target) {
  if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
  if (auto st = require_group(fn, *b, PluginGroup::modules); st != ACCEL_SUCCESS) return st;
  if (capturing_anywhere()) [[unlikely]]
    return refuse_unsafe(fn, b, target);
  return ACCEL_SUCCESS;
}

// The refusal of a handle that is not live: NULL, one of an object since
// unloaded (destroyed), or a value accel never handed out.
template <typename T>
[[gnu::cold, gnu::noinline]] accel_status_t refuse_handle(const char* fn, const char* what,
                                                          const SlotTable<T>& table,
                                                          const void* handle, const char* gone) {
  if (handle == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} is NULL", fn, what);
  return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: {} {} is not a live {}: {}", fn, what, handle,
               what, table.was_issued(handle) ? gone : "accel never returned it");
}

// Sets `m` to the live module `handle` names.
accel_status_t check_module(const char* fn, accel_module_t handle, accel_module_s*& m) {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  m = g_modules.find(handle);
  if (!live_as(m, handle)) [[unlikely]]
    return refuse_handle(fn, "module", g_modules, handle, "it was unloaded");
  return ensure_ready(*m->backend);
}

// The kernel's slot, live or not (launches count themselves in before the
// liveness check: InFlight).
[[gnu::always_inline]] inline accel_kernel_s* kernel_slot(accel_kernel_t handle) {
  return g_kernels.find(handle);
}

[[gnu::always_inline]] inline accel_status_t check_kernel(const char* fn, accel_kernel_t handle,
                                                          accel_kernel_s* k) {
  if (auto st = check_reentry(fn); st != ACCEL_SUCCESS) [[unlikely]]
    return st;
  // seq_cst: pairs with the unload's dead store and in_flight read (InFlight).
  if (!live_as(k, handle, std::memory_order_seq_cst)) [[unlikely]] {
    return refuse_handle(fn, "kernel", g_kernels, handle,
                         "it was destroyed (its module was unloaded)");
  }
  return ensure_ready(*k->backend);
}

// Holds a launch in its kernel's in_flight count for the scope.
class InFlight {
 public:
  explicit InFlight(accel_kernel_s& k) : k_(k) {
    k_.in_flight.fetch_add(1, std::memory_order_seq_cst);
  }
  ~InFlight() { k_.in_flight.fetch_sub(1, std::memory_order_release); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  accel_kernel_s& k_;
};

// Waits until no launch of `k` is past its liveness check (k is dead
// already, so none can start; the ones inside only queue, never wait).
void drain_launches(const accel_kernel_s& k) {
  while (k.in_flight.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
}

// Collects a plugin's build log for one image into the thread's log.
struct LogSink {
  std::string text;
  static void append(void* context, const char* data, size_t length) {
    if (context == nullptr || data == nullptr) return;
    static_cast<LogSink*>(context)->text.append(data, length);
  }
};

// The first `limit` bytes of `log`, for an error detail.
std::string log_head(const std::string& log, size_t limit = 2000) {
  if (log.size() <= limit) return log;
  return log.substr(0, limit) + "... (accel_module_build_log has the whole log)";
}

// The plugin's kernel_get_attributes into `attrs`, every field it leaves
// alone -1 (unknown).
accel_status_t query_kernel_attributes(Backend& b, const accel_kernel_s& k,
                                       accel_kernel_attributes_t& attrs) {
  attrs = accel_kernel_attributes_t{};
  attrs.struct_size = sizeof attrs;
  attrs.max_threads_per_block = attrs.static_shared_bytes = attrs.private_bytes = -1;
  attrs.num_registers = attrs.preferred_block_multiple = -1;
  attrs.num_args = -1;
  return call_plugin(b, "kernel_get_attributes",
                     [&] { return b.api.kernel_get_attributes(k.native, &attrs); });
}

// Asks the plugin for the kernel's limits and parameters, once.
accel_status_t describe_kernel(Backend& b, accel_kernel_s& k) {
  accel_kernel_attributes_t attrs;
  if (auto st = query_kernel_attributes(b, k, attrs); st != ACCEL_SUCCESS) return st;
  k.max_threads_per_block = attrs.max_threads_per_block;
  size_t count = 0;
  uint32_t flags = 0;
  begin_plugin_call();
  accel_status_t st = b.api.kernel_get_params(k.native, nullptr, 0, &count, &flags);
  if (st == ACCEL_ERROR_NOT_SUPPORTED) return ACCEL_SUCCESS;  // the vendor checks launches
  if (st != ACCEL_SUCCESS) return finish_plugin_call(b, "kernel_get_params", st);
  k.params.assign(count, accel_plugin_kernel_param_t{});
  size_t again = 0;
  st = call_plugin(b, "kernel_get_params", [&] {
    return b.api.kernel_get_params(k.native, k.params.data(), k.params.size(), &again, &flags);
  });
  if (st != ACCEL_SUCCESS) return st;
  if (again != count) {
    return failf(ACCEL_ERROR_BACKEND_FAILURE,
                 "{}: kernel_get_params said {} parameters, then {}, for kernel '{}'", b.name,
                 count, again, k.name);
  }
  k.param_flags = flags;
  k.params_known = true;
  // The member was `reserved` (0) before ABI 1.3; a 1.2 plugin's word is
  // not trusted to be a type.
  k.param_types_known = false;
  for (accel_plugin_kernel_param_t& p : k.params) {
    if (b.abi_minor < 3) p.type = 0;
    const uint32_t t = p.type & ACCEL_PLUGIN_PARAM_TYPE_MASK;
    if (t == ACCEL_KERNEL_ARG_TYPE_INT || t == ACCEL_KERNEL_ARG_TYPE_FLOAT)
      k.param_types_known = true;
  }
  return ACCEL_SUCCESS;
}

// accel_module_load's arguments: at least one image, each of a known
// format and not empty. `given` gets the bits of the formats given.
accel_status_t check_images(const char* fn, const accel_module_image_t* images, size_t count,
                            uint64_t& given) {
  if (count == 0 || images == nullptr) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: no images (images {}, count {})", fn,
                 static_cast<const void*>(images), count);
  }
  for (size_t i = 0; i < count; ++i) {
    const auto& im = images[i];
    if (static_cast<unsigned>(im.format) >= ACCEL_MODULE_FORMAT_COUNT) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: image {} has format {}, not an accel_module_format_t", fn, i,
                   static_cast<int>(im.format));
    }
    if (im.data == nullptr || im.size == 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: image {} ({}) is empty (data {}, size {})",
                   fn, i, kFormatNames[im.format], im.data, im.size);
    }
    given |= ACCEL_MODULE_FORMAT_BIT(im.format);
  }
  return ACCEL_SUCCESS;
}

// A handle for the module `native` the plugin loaded from an image of
// `format`; the thread's build log becomes `log`. With no handle free, the
// plugin's module is unloaded again and the call fails.
accel_status_t publish_module(const char* fn, Backend& b, int32_t target,
                              accel_module_format_t format, accel_plugin_module_t native,
                              std::string& log, accel_module_t* module) {
  accel_module_s* m = g_modules.acquire();
  if (m == nullptr) {
    b.api.module_unload(native);
    thread_state().build_log = std::move(log);
    return failf(ACCEL_ERROR_OUT_OF_MEMORY, "{}: no room for another module handle", fn);
  }
  m->backend = &b;
  m->device = target;
  m->format = format;
  m->native = native;
  m->kernels.clear();
  const uintptr_t h = SlotTable<accel_module_s>::handle_of(*m);
  m->handle.store(h, std::memory_order_release);
  thread_state().build_log = std::move(log);
  *module = reinterpret_cast<accel_module_t>(h);
  return ACCEL_SUCCESS;
}

// Loads the first of `images` that device `target` accepts and that builds,
// in the caller's order: a malformed image or a failed build moves on to the
// next, any other failure stops. The thread's build log gets every tried
// image's log, each under a header naming the image; when none loads, the
// error is the first image's, with the head of the log.
accel_status_t load_first_accepted(const char* fn, Backend& b, int32_t target,
                                   std::span<const accel_module_image_t> images, uint64_t accepted,
                                   const char* options, accel_module_t* module,
                                   std::vector<std::string>* errors = nullptr) {
  std::string log;
  std::string first_error;
  accel_status_t first_status = ACCEL_SUCCESS;
  const std::string opts = options == nullptr ? "" : options;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto& im = images[i];
    if ((accepted & ACCEL_MODULE_FORMAT_BIT(im.format)) == 0) continue;
    LogSink sink;
    accel_plugin_module_t native = nullptr;
    auto st = call_plugin(b, "module_load", [&] {
      return b.api.module_load(target, &im, opts.c_str(), &LogSink::append, &sink, &native);
    });
    if (!sink.text.empty()) {
      log += "== image " + std::to_string(i) + " (" + kFormatNames[im.format] + ") ==\n";
      log += sink.text;
      if (log.back() != '\n') log += '\n';
    }
    if (st == ACCEL_SUCCESS) return publish_module(fn, b, target, im.format, native, log, module);
    if (st != ACCEL_ERROR_BUILD_FAILED && st != ACCEL_ERROR_INVALID_ARGUMENT) {
      thread_state().build_log = std::move(log);
      return st;
    }
    if (errors != nullptr) (*errors)[i] = thread_state().last_error;
    if (first_status == ACCEL_SUCCESS) {
      first_status = st;
      first_error =
          fmt::format("image {} ({}): {}", i, kFormatNames[im.format], thread_state().last_error);
    }
  }
  thread_state().build_log = log;
  if (log.empty()) return failf(first_status, "{}: {}", fn, first_error);
  return failf(first_status, "{}: {}; build log:\n{}", fn, first_error, log_head(log));
}

// accel_module_load_file once the files are read: the ones the device
// takes go to load_first_accepted in the caller's order. When none loads,
// the error names every path and why it was not used.
accel_status_t load_files(const char* fn, Backend& b, int32_t target,
                          const std::vector<ModuleFile>& files, uint64_t accepted,
                          const char* options, accel_module_t* module) {
  std::vector<std::string> why(files.size());
  std::vector<accel_module_image_t> images;
  std::vector<size_t> file_of;  // images[j] is files[file_of[j]]
  bool any_read = false;
  for (size_t i = 0; i < files.size(); ++i) {
    const ModuleFile& f = files[i];
    if (!f.skipped.empty()) {
      why[i] = f.skipped;
      continue;
    }
    any_read = true;
    if ((accepted & ACCEL_MODULE_FORMAT_BIT(f.format)) == 0) {
      why[i] = fmt::format("format {}, which the device does not take", kFormatNames[f.format]);
      continue;
    }
    images.push_back({f.format, f.bytes.data(), f.bytes.size()});
    file_of.push_back(i);
  }
  accel_status_t st = any_read ? ACCEL_ERROR_NOT_SUPPORTED : ACCEL_ERROR_INVALID_ARGUMENT;
  if (!images.empty()) {
    std::vector<std::string> errors(images.size());
    st = load_first_accepted(fn, b, target, images, accepted, options, module, &errors);
    if (st == ACCEL_SUCCESS) return st;
    // Other failures (out of memory, the backend) are not the files' fault.
    if (st != ACCEL_ERROR_BUILD_FAILED && st != ACCEL_ERROR_INVALID_ARGUMENT) return st;
    for (size_t j = 0; j < images.size(); ++j) why[file_of[j]] = errors[j];
  } else {
    thread_state().build_log.clear();
  }
  std::string list;
  for (size_t i = 0; i < files.size(); ++i)
    list += fmt::format("{}\n  '{}': {}", i == 0 ? "" : ";", files[i].path, why[i]);
  const std::string& log = thread_state().build_log;
  return failf(st, "{}: no file loaded on {} device {} (it takes {}):{}{}", fn, b.name, target,
               format_list(accepted), list,
               log.empty() ? std::string() : "\nbuild log:\n" + log_head(log));
}

// The stream sanitizer's record of a launch: each device pointer argument
// is read, and also written unless the backend reports a const pointee.
void note_kernel_accesses(const accel_kernel_s& k, accel_stream_t stream,
                          const accel_kernel_arg_t* args, size_t num_args, const void* caller) {
  for (size_t i = 0; i < num_args; ++i) {
    if (args[i].kind != ACCEL_KERNEL_ARG_DEVICE_POINTER || args[i].value == nullptr) continue;
    const sanitizer::Call call{"accel_launch_kernel", caller, k.name.c_str(), static_cast<int>(i)};
    const bool read_only = k.params_known && i < k.params.size() &&
                           (k.params[i].type & ACCEL_PLUGIN_PARAM_READ_ONLY) != 0;
    // A write is checked against earlier reads and writes both.
    if (read_only) {
      sanitizer::on_read(args[i].value, stream, call);
    } else {
      sanitizer::on_write(args[i].value, stream, call);
    }
  }
}

// The block of a launch of `k`: every extent >= 1 and the product within
// the kernel's max_threads_per_block (when known).
accel_status_t check_block(const char* fn, const accel_kernel_s& k, accel_dim3_t block) {
  if (block.x == 0 || block.y == 0 || block.z == 0) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: kernel '{}': block ({}, {}, {}) has a 0 extent (each must be >= 1)", fn,
                 k.name, block.x, block.y, block.z);
  }
  // x * y fits 64 bits; times z may not (2^22 * 2^22 * 2^20 wraps to 0).
  uint64_t threads = 0;
  const bool wraps = __builtin_mul_overflow(uint64_t{block.x} * block.y, block.z, &threads);
  if (k.max_threads_per_block > 0 &&
      (wraps || threads > static_cast<uint64_t>(k.max_threads_per_block))) [[unlikely]] {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: kernel '{}': block ({}, {}, {}) has {} threads; this kernel allows at most "
                 "{} per block on {} device {}",
                 fn, k.name, block.x, block.y, block.z, threads, k.max_threads_per_block,
                 k.backend->name, k.device);
  }
  return ACCEL_SUCCESS;
}

}  // namespace

extern "C" {

const char* accel_module_format_name(accel_module_format_t format) {
  auto i = static_cast<unsigned>(format);
  return i < ACCEL_MODULE_FORMAT_COUNT ? kFormatNames[i] : nullptr;
}

accel_status_t accel_device_module_formats(int32_t device, uint64_t* formats) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (formats == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: formats is NULL", fn);
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = check_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    if ((b->capabilities & ACCEL_PLUGIN_CAP_MODULES) == 0) {
      *formats = 0;  // documented: no modules, no formats
      return ACCEL_SUCCESS;
    }
    uint64_t mask = 0;
    auto st =
        call_plugin(*b, "module_formats", [&] { return b->api.module_formats(target, &mask); });
    if (st != ACCEL_SUCCESS) return st;
    *formats = mask & (ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_COUNT) - 1);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_module_load(int32_t device, const accel_module_image_t* images, size_t count,
                                 const char* options, accel_module_t* module) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    thread_state().build_log.clear();
    if (module == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: module is NULL", fn);
    uint64_t given = 0;
    if (auto st = check_images(fn, images, count, given); st != ACCEL_SUCCESS) return st;
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = module_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    uint64_t accepted = 0;
    if (auto st = call_plugin(*b, "module_formats",
                              [&] { return b->api.module_formats(target, &accepted); });
        st != ACCEL_SUCCESS)
      return st;
    if ((given & accepted) == 0) {
      return failf(ACCEL_ERROR_NOT_SUPPORTED,
                   "{}: {} device {} takes none of the images given: given {}; the device takes {}",
                   fn, b->name, target, format_list(given), format_list(accepted));
    }
    return load_first_accepted(fn, *b, target, {images, count}, accepted, options, module);
  });
}

accel_status_t accel_module_load_file(int32_t device, const char* const* paths, size_t count,
                                      const char* options, accel_module_t* module) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    thread_state().build_log.clear();
    if (module == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: module is NULL", fn);
    if (paths == nullptr || count == 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: no paths (paths {}, count {})", fn,
                   static_cast<const void*>(paths), count);
    }
    for (size_t i = 0; i < count; ++i) {
      if (paths[i] == nullptr || paths[i][0] == '\0')
        return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: path {} is NULL or empty", fn, i);
    }
    Backend* b = nullptr;
    int32_t target = 0;
    if (auto st = module_device(fn, device, b, target); st != ACCEL_SUCCESS) return st;
    uint64_t accepted = 0;
    if (auto st = call_plugin(*b, "module_formats",
                              [&] { return b->api.module_formats(target, &accepted); });
        st != ACCEL_SUCCESS)
      return st;
    std::vector<ModuleFile> files;
    files.reserve(count);
    for (size_t i = 0; i < count; ++i) files.push_back(read_module_file(paths[i]));
    return load_files(fn, *b, target, files, accepted, options, module);
  });
}

accel_status_t accel_module_format(accel_module_t module, accel_module_format_t* format) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (format == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: format is NULL", fn);
    accel_module_s* m = nullptr;
    if (auto st = check_module(fn, module, m); st != ACCEL_SUCCESS) return st;
    *format = m->format;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_module_build_log(char* buffer, size_t capacity, size_t* length) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (auto st =
            check_out_array(fn, length, "length", buffer, "buffer", capacity, "with capacity");
        st != ACCEL_SUCCESS)
      return st;
    return copy_out_text(thread_state().build_log, buffer, capacity, length);
  });
}

accel_status_t accel_module_unload(accel_module_t module) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    accel_module_s* m = nullptr;
    if (auto st = check_module(fn, module, m); st != ACCEL_SUCCESS) return st;
    Backend& b = *m->backend;
    if (const HostCall* call = running_host_call();
        call != nullptr && call->backend == &b && call->device == m->device) [[unlikely]] {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: called from a host function running on a stream of {} device {}; "
                   "unloading waits for the device, so it would wait for the host function "
                   "itself",
                   fn, b.name, m->device);
    }
    if (capturing_anywhere()) [[unlikely]] {
      if (auto st = refuse_unsafe(fn, &b, m->device); st != ACCEL_SUCCESS) return st;
    }
    if (const uint32_t holds = graphs_holding(m); holds > 0) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: {} graph{} hold{} kernels of this module; destroy {} first (or end the "
                   "capture that records them)",
                   fn, holds, holds == 1 ? "" : "s", holds == 1 ? "s" : "",
                   holds == 1 ? "it" : "them");
    }
    // Dead first, so a launch or kernel lookup from here on is refused
    // instead of being queued behind the wait below and then running code
    // that is gone.
    uintptr_t expected = reinterpret_cast<uintptr_t>(module);
    if (!m->handle.compare_exchange_strong(expected, 0)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: module was unloaded by another thread", fn);
    }
    std::vector<accel_kernel_s*> kernels;
    {
      // accel_module_get_kernel checks the module again under this lock,
      // so no kernel is added after the swap.
      std::lock_guard lock(m->kernels_mutex);
      kernels.swap(m->kernels);
    }
    for (accel_kernel_s* k : kernels) k->handle.store(0, std::memory_order_seq_cst);
    for (accel_kernel_s* k : kernels) drain_launches(*k);
    // cuModuleUnload (and the others) must not free code a queued launch
    // runs. On failure the objects are destroyed anyway: the handles are
    // dead already and could not be unloaded again.
    accel_status_t result =
        call_plugin(b, "device_synchronize", [&] { return b.api.device_synchronize(m->device); });
    for (accel_kernel_s* k : kernels) {
      auto st = call_plugin(b, "kernel_destroy", [&] { return b.api.kernel_destroy(k->native); });
      if (result == ACCEL_SUCCESS) result = st;
      k->native = nullptr;
      k->params.clear();
      g_kernels.release(k);
    }
    auto st = call_plugin(b, "module_unload", [&] { return b.api.module_unload(m->native); });
    if (result == ACCEL_SUCCESS) result = st;
    m->native = nullptr;
    g_modules.release(m);
    return result;
  });
}

accel_status_t accel_module_get_kernel(accel_module_t module, const char* name,
                                       accel_kernel_t* kernel) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (kernel == nullptr) return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: kernel is NULL", fn);
    if (name == nullptr || name[0] == '\0')
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: name is NULL or empty", fn);
    accel_module_s* m = nullptr;
    if (auto st = check_module(fn, module, m); st != ACCEL_SUCCESS) return st;
    Backend& b = *m->backend;
    // One lock per module: creating a kernel is rare, and the same name must
    // give the same handle.
    std::lock_guard lock(m->kernels_mutex);
    if (!live_as(m, module)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: module was unloaded by another thread", fn);
    }
    for (accel_kernel_s* k : m->kernels) {
      if (k->name == name) {
        *kernel = reinterpret_cast<accel_kernel_t>(k->handle.load(std::memory_order_relaxed));
        return ACCEL_SUCCESS;
      }
    }
    accel_plugin_kernel_t native = nullptr;
    if (auto st = call_plugin(b, "kernel_create",
                              [&] { return b.api.kernel_create(m->native, name, &native); });
        st != ACCEL_SUCCESS)
      return st;
    accel_kernel_s* k = g_kernels.acquire();
    if (k == nullptr) {
      b.api.kernel_destroy(native);
      return failf(ACCEL_ERROR_OUT_OF_MEMORY, "{}: no room for another kernel handle", fn);
    }
    k->module = m;
    k->backend = &b;
    k->device = m->device;
    k->native = native;
    k->name = name;
    k->max_threads_per_block = -1;
    k->params_known = false;
    k->param_flags = 0;
    k->params.clear();
    k->param_types_known = false;
    if (auto st = describe_kernel(b, *k); st != ACCEL_SUCCESS) {
      b.api.kernel_destroy(native);
      k->native = nullptr;
      g_kernels.release(k);
      return st;
    }
    m->kernels.push_back(k);
    const uintptr_t h = SlotTable<accel_kernel_s>::handle_of(*k);
    k->handle.store(h, std::memory_order_release);
    *kernel = reinterpret_cast<accel_kernel_t>(h);
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_kernel_get_attributes(accel_kernel_t kernel,
                                           accel_kernel_attributes_t* attributes) {
  const char* const fn = __func__;
  return guarded(fn, [&] {
    if (attributes == nullptr || attributes->struct_size < sizeof(accel_kernel_attributes_t)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: attributes is NULL or its struct_size is too small (set it to "
                   "sizeof(accel_kernel_attributes_t))",
                   fn);
    }
    accel_kernel_s* k = kernel_slot(kernel);
    if (auto st = check_kernel(fn, kernel, k); st != ACCEL_SUCCESS) return st;
    Backend& b = *k->backend;
    accel_kernel_attributes_t a;
    if (auto st = query_kernel_attributes(b, *k, a); st != ACCEL_SUCCESS) return st;
    a.num_args = k->params_known ? static_cast<int32_t>(k->params.size()) : -1;
    *attributes = a;
    return ACCEL_SUCCESS;
  });
}

accel_status_t accel_launch_kernel(accel_kernel_t kernel, const accel_launch_config_t* config,
                                   const accel_kernel_arg_t* args, size_t num_args) {
  const char* const fn = __func__;
  const void* caller = __builtin_return_address(0);
  return guarded(fn, [&] {
    // Counted in before the liveness check (both seq_cst: the unload side
    // stores dead, then reads the count), out when the plugin returned.
    if (kernel == nullptr) [[unlikely]]
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: kernel is NULL", fn);
    accel_kernel_s* k = kernel_slot(kernel);
    if (k == nullptr) [[unlikely]]
      return check_kernel(fn, kernel, k);
    InFlight in_flight(*k);
    if (auto st = check_kernel(fn, kernel, k); st != ACCEL_SUCCESS) [[unlikely]]
      return st;
    // A config from before arg_types was appended ends at it: no types.
    if (config == nullptr || config->struct_size < offsetof(accel_launch_config_t, arg_types))
        [[unlikely]] {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: config is NULL or its struct_size is too small (set it to "
                   "sizeof(accel_launch_config_t))",
                   fn);
    }
    Backend& b = *k->backend;
    accel_stream_t stream = config->stream;
    if (stream == nullptr) {
      if (auto st = current_stream(b, k->device, stream); st != ACCEL_SUCCESS) return st;
    } else if (!live(stream)) [[unlikely]] {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: stream is not a live stream (destroyed?)",
                   fn);
    } else if (stream->backend != &b || stream->device != k->device) [[unlikely]] {
      return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                   "{}: the stream belongs to {} device {}, kernel '{}' to {} device {}", fn,
                   stream->backend->name, stream->device, k->name, b.name, k->device);
    }
    const accel_dim3_t grid = config->grid;
    const accel_dim3_t block = config->block;
    if (auto st = check_block(fn, *k, block); st != ACCEL_SUCCESS) [[unlikely]]
      return st;
    // A kernel without parameters launched without arguments (the launch
    // overhead benchmark's case) has nothing to check: no call.
    if (num_args != 0 || !k->params_known || !k->params.empty()) {
      const int32_t* types =
          config->struct_size >= offsetof(accel_launch_config_t, arg_types) + sizeof(void*)
              ? config->arg_types
              : nullptr;
      if (auto st = check_kernel_args(fn, *k, args, num_args, types); st != ACCEL_SUCCESS)
        return st;
    }
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return ACCEL_SUCCESS;  // nothing to run
    if (capturing_anywhere()) [[unlikely]] {
      if (auto r = record_op(fn, stream,
                             kernel_op(k, grid, block, config->shared_bytes, args, num_args));
          r.recorded)
        return r.status;
    }
    TraceSpan span(stream);
    auto st = call_plugin(b, "launch_kernel", [&] {
      return b.api.launch_kernel(k->native, grid, block, config->shared_bytes, args, num_args,
                                 stream->native);
    });
    if (span) {
      span.end(st, {.kind = SpanKind::kernel,
                    .kernel = k->name.c_str(),
                    .grid = grid,
                    .block = block,
                    .shared_bytes = static_cast<uint32_t>(config->shared_bytes)});
    }
    if (sanitizer::on() && st == ACCEL_SUCCESS) [[unlikely]]
      note_kernel_accesses(*k, stream, args, num_args, caller);
    return st;
  });
}

}  // extern "C"
