#include "kernel_args.hpp"

#include "error.hpp"
#include "memory_table.hpp"

namespace accel::core {

namespace {

// The segments the calling thread's launches last passed pointers into,
// valid while the memory table's generation is unchanged: a training loop
// launches into the same few segments again and again, and the cache spares
// each pointer argument a lock and a tree walk.
struct SegmentCache {
  struct Entry {
    uintptr_t base = 0;
    size_t bytes = 0;
    Backend* backend = nullptr;
    int32_t device = 0;
    accel_memory_type_t type = ACCEL_MEMORY_DEVICE;
  };
  uint64_t generation = 0;  // 0: empty
  Entry entries[4];
  unsigned next = 0;
};
thread_local SegmentCache t_segments;

bool find_segment(const void* ptr, Allocation& out) {
  SegmentCache& c = t_segments;
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  if (c.generation == table_generation()) {
    for (const auto& e : c.entries) {
      if (e.bytes != 0 && p - e.base < e.bytes) {
        out.base = e.base;
        out.bytes = e.bytes;
        out.backend = e.backend;
        out.device = e.device;
        out.type = e.type;
        return true;
      }
    }
  }
  uint64_t generation = 0;
  if (!find_entry_at(ptr, out, generation)) return false;
  if (c.generation != generation) {
    c = SegmentCache{};
    c.generation = generation;
  }
  c.entries[c.next++ % 4] = {out.base, out.bytes, out.backend, out.device, out.type};
  return true;
}

const char* kind_name(uint32_t kind) {
  switch (kind) {
    case ACCEL_KERNEL_ARG_VALUE:
      return "value";
    case ACCEL_KERNEL_ARG_DEVICE_POINTER:
      return "device pointer";
    case ACCEL_KERNEL_ARG_LOCAL_MEMORY:
      return "local memory";
    default:
      return "unknown kind";
  }
}

std::string kinds_text(uint32_t kinds) {
  std::string out;
  for (uint32_t k = 0; k < 3; ++k) {
    if ((kinds & ACCEL_PLUGIN_ARG_KIND_BIT(k)) == 0) continue;
    if (!out.empty()) out += " or ";
    out += kind_name(k);
  }
  return out.empty() ? "nothing" : out;
}

// A device pointer argument in no allocation accel made or registered: the
// launch goes ahead only when the plugin's vendor reports it as memory a
// kernel of the kernel's device may dereference (plugin-abi rule ABI-42);
// otherwise it is refused as a copy refuses such a pointer, since a host
// pointer "works" on host-memory backends and faults on a discrete GPU.
accel_status_t check_foreign_pointer(const char* fn, const accel_kernel_s& k, size_t i,
                                     const void* ptr) {
  const auto ask = k.backend->api.pointer_get_device;
  int32_t device = -1;
  const accel_status_t st = ask != nullptr ? ask(ptr, &device) : ACCEL_ERROR_NOT_SUPPORTED;
  if (st == ACCEL_SUCCESS && (device == -1 || device == k.device)) return ACCEL_SUCCESS;
  if (st == ACCEL_SUCCESS) {
    return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                 "{}: kernel '{}' argument {}: pointer {} is memory of {} device {} (the "
                 "vendor's allocation), the kernel's device is {} (copy it with "
                 "accel_memcpy_peer_async first)",
                 fn, k.name, i, ptr, k.backend->name, device, k.device);
  }
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: kernel '{}' argument {}: device pointer {} is not inside a live allocation "
               "made by accel_malloc{} (pass accel_malloc memory; host memory needs "
               "accel_host_malloc or accel_host_register)",
               fn, k.name, i, ptr,
               ask != nullptr
                   ? fmt::format(" and {} does not report it as device memory", k.backend->name)
                   : std::string());
}

// One argument on its own: kind in range, sizes that make sense, and a
// device pointer that accel knows belongs to the kernel's device.
accel_status_t check_one(const char* fn, const accel_kernel_s& k, size_t i,
                         const accel_kernel_arg_t& a) {
  switch (a.kind) {
    case ACCEL_KERNEL_ARG_VALUE:
      if (a.size == 0 || a.value == nullptr) {
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: kernel '{}' argument {}: a value argument needs size > 0 and value "
                     "pointing at the bytes (size {}, value {})",
                     fn, k.name, i, a.size, a.value);
      }
      return ACCEL_SUCCESS;
    case ACCEL_KERNEL_ARG_DEVICE_POINTER: {
      if (a.size != 0 && a.size != sizeof(void*)) {
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: kernel '{}' argument {}: a device pointer argument has size {} "
                     "(sizeof(void*)) or 0, not {}",
                     fn, k.name, i, sizeof(void*), a.size);
      }
      if (a.value == nullptr) return ACCEL_SUCCESS;  // NULL is a valid pointer to pass
      // The segment is enough to tell the device: not
      // find_allocation, which would also take the allocator's lock.
      Allocation alloc;
      if (!find_segment(a.value, alloc)) return check_foreign_pointer(fn, k, i, a.value);
      if (alloc.type != ACCEL_MEMORY_DEVICE) return ACCEL_SUCCESS;  // pinned host memory
      if (alloc.backend != k.backend || alloc.device != k.device) {
        return failf(ACCEL_ERROR_DEVICE_MISMATCH,
                     "{}: kernel '{}' argument {}: pointer {} belongs to {} device {}, the "
                     "kernel to {} device {} (copy it with accel_memcpy_peer_async first)",
                     fn, k.name, i, a.value, alloc.backend->name, alloc.device, k.backend->name,
                     k.device);
      }
      return ACCEL_SUCCESS;
    }
    case ACCEL_KERNEL_ARG_LOCAL_MEMORY:
      if (a.size == 0) {
        return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                     "{}: kernel '{}' argument {}: a local memory argument needs size > 0 bytes",
                     fn, k.name, i);
      }
      return ACCEL_SUCCESS;
    default:
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' argument {}: kind {} is not an accel_kernel_arg_kind_t", fn,
                   k.name, i, static_cast<int>(a.kind));
  }
}

// What a value of accel_kernel_arg_type_t `type` and `bytes` is, in words.
std::string type_text(int32_t type, size_t bytes) {
  switch (type) {
    case ACCEL_KERNEL_ARG_TYPE_INT:
      return fmt::format("an integer of {} bytes", bytes);
    case ACCEL_KERNEL_ARG_TYPE_FLOAT:
      return fmt::format("a floating-point value of {} bytes", bytes);
    case ACCEL_KERNEL_ARG_TYPE_POINTER:
      return "a pointer";
    case ACCEL_KERNEL_ARG_TYPE_STRUCT:
      return fmt::format("a struct of {} bytes", bytes);
    default:
      return fmt::format("{} bytes", bytes);
  }
}

// A parameter's type as a C programmer names it: "float (4 bytes)".
std::string param_type_text(uint32_t type, size_t bytes) {
  if (type == ACCEL_KERNEL_ARG_TYPE_FLOAT) {
    const char* name = bytes == 2 ? "half" : bytes == 8 ? "double" : "float";
    return fmt::format("{} ({} bytes)", name, bytes);
  }
  return fmt::format("an integer ({} bytes)", bytes);
}

// Argument i's declared type against parameter `param`'s: only an integer
// for a float or a float for an integer is refused (integers of one size
// match whatever their signedness, as C's conversions allow; a struct or
// an unknown type is checked by its size alone).
accel_status_t check_type(const char* fn, const accel_kernel_s& k, size_t i, size_t param,
                          const accel_kernel_arg_t& a, int32_t type) {
  const uint32_t want = k.params[param].type & ACCEL_PLUGIN_PARAM_TYPE_MASK;
  const bool numeric_arg = type == ACCEL_KERNEL_ARG_TYPE_INT || type == ACCEL_KERNEL_ARG_TYPE_FLOAT;
  const bool numeric_param =
      want == ACCEL_KERNEL_ARG_TYPE_INT || want == ACCEL_KERNEL_ARG_TYPE_FLOAT;
  if (a.kind != ACCEL_KERNEL_ARG_VALUE || !numeric_arg || !numeric_param ||
      static_cast<uint32_t>(type) == want)
    return ACCEL_SUCCESS;
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: kernel '{}' argument {} is {}; parameter {} is {}: its bits would be read as "
               "another type (convert it first, or launch through a typed kernel, "
               "accel::Module::kernel<void(...)>(name), which converts as CUDA's <<<>>> does)",
               fn, k.name, i, type_text(type, a.size), param,
               param_type_text(want, k.params[param].size != 0 ? k.params[param].size : a.size));
}

// An argument where parameter `param` takes local memory: say which argument
// is missing and how to pass it.
accel_status_t local_missing(const char* fn, const accel_kernel_s& k, size_t i, size_t param,
                             const accel_kernel_arg_t& a) {
  return failf(ACCEL_ERROR_INVALID_ARGUMENT,
               "{}: kernel '{}' parameter {} takes local memory (an OpenCL-style __local "
               "parameter) and argument {} is a {} argument: the local memory argument is "
               "missing. Pass it as argument {}, accel::LocalMemory{{bytes}} in C++ "
               "(ACCEL_KERNEL_ARG_LOCAL_MEMORY in C), instead of shared_bytes",
               fn, k.name, param, i, kind_name(a.kind), param);
}

// Whether parameter `param` is one that only local memory fills.
bool takes_local_only(const accel_kernel_s& k, size_t param) {
  return param < k.params.size() &&
         k.params[param].kinds == ACCEL_PLUGIN_ARG_KIND_BIT(ACCEL_KERNEL_ARG_LOCAL_MEMORY);
}

}  // namespace

accel_status_t check_kernel_args(const char* fn, const accel_kernel_s& k,
                                 const accel_kernel_arg_t* args, size_t num_args,
                                 const int32_t* arg_types) {
  if (num_args > 0 && args == nullptr) {
    return failf(ACCEL_ERROR_INVALID_ARGUMENT, "{}: args is NULL with num_args {}", fn, num_args);
  }
  const bool local_in_shared = (k.param_flags & ACCEL_PLUGIN_KERNEL_LOCAL_ARGS_IN_SHARED) != 0;
  size_t param = 0;  // the parameter the next argument fills
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    if (auto st = check_one(fn, k, i, a); st != ACCEL_SUCCESS) return st;
    if (arg_types != nullptr && (arg_types[i] < ACCEL_KERNEL_ARG_TYPE_UNKNOWN ||
                                 arg_types[i] > ACCEL_KERNEL_ARG_TYPE_STRUCT))
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' arg_types[{}] is {}, not an accel_kernel_arg_type_t", fn,
                   k.name, i, arg_types[i]);
    if (!k.params_known) continue;
    if (local_in_shared && a.kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY) continue;  // no parameter
    if (param >= k.params.size()) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' takes {} parameter{}, the launch passes more (argument {})", fn,
                   k.name, k.params.size(), k.params.size() == 1 ? "" : "s", i);
    }
    const accel_plugin_kernel_param_t& p = k.params[param];
    if ((p.kinds & ACCEL_PLUGIN_ARG_KIND_BIT(a.kind)) == 0) {
      if (takes_local_only(k, param)) return local_missing(fn, k, i, param, a);
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' argument {} is a {} argument; parameter {} takes {}", fn,
                   k.name, i, kind_name(a.kind), param, kinds_text(p.kinds));
    }
    if (a.kind == ACCEL_KERNEL_ARG_VALUE && p.size != 0 && p.size != a.size) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' argument {} has {} bytes; parameter {} is {} bytes", fn, k.name,
                   i, a.size, param, p.size);
    }
    if (arg_types != nullptr && k.param_types_known) {
      if (auto st = check_type(fn, k, i, param, a, arg_types[i]); st != ACCEL_SUCCESS) return st;
    }
    ++param;
  }
  if (k.params_known && param != k.params.size()) {
    if (param < k.params.size() && takes_local_only(k, param)) {
      return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                   "{}: kernel '{}' takes {} parameters; the launch passes {}: parameter {} "
                   "takes local memory and has no argument. Pass it as argument {}, "
                   "accel::LocalMemory{{bytes}} in C++ (ACCEL_KERNEL_ARG_LOCAL_MEMORY in C)",
                   fn, k.name, k.params.size(), param, param, param);
    }
    return failf(ACCEL_ERROR_INVALID_ARGUMENT,
                 "{}: kernel '{}' takes {} parameter{}; the launch passes {}{}", fn, k.name,
                 k.params.size(), k.params.size() == 1 ? "" : "s", param,
                 local_in_shared ? " (local memory arguments take none on this backend)" : "");
  }
  return ACCEL_SUCCESS;
}

}  // namespace accel::core
