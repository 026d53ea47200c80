// modules.cpp - sim modules (ABI 1.2): a module is a host shared object
// following include/accel/accel_sim_kernel.h, handed over as bytes, checked
// as an ELF file of this host, loaded from memory (memfd_create + dlopen of
// /proc/self/fd/N) and described by the kernel table it exports. Kernels
// are looked up by name in the copy of that table; launch.cpp runs them.
#include "backend.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <utility>

namespace accel::sim {

namespace {

// Most parameters one sim kernel may declare and longest kernel name: far
// above anything real (CUDA passes at most 32 KiB of parameters), low
// enough that a garbage table is refused instead of read for long.
constexpr uint32_t kMaxParams = 1024;
constexpr size_t kMaxNameLength = 4096;
// Largest VALUE parameter: CUDA's limit on a kernel's parameter bytes.
constexpr uint32_t kMaxValueBytes = 32764;

// Passes `text` to the core's build-log sink (module_load's `log`), which
// may be NULL.
void to_log(accel_plugin_build_log_fn log, void* ctx, const std::string& text) {
  if (log == nullptr) return;
  std::string line = text;
  if (line.empty() || line.back() != '\n') line += '\n';
  log(ctx, line.data(), line.size());
}

// ACCEL_ERROR_BUILD_FAILED with `detail` both as the error and in the build
// log: accel_module_build_log then shows why the image did not load.
accel_status_t build_failed(accel_plugin_build_log_fn log, void* ctx, const std::string& detail) {
  to_log(log, ctx, detail);
  return fail(ACCEL_ERROR_BUILD_FAILED, "module_load: %s", detail.c_str());
}

// The ELF header this plugin itself was loaded from: the class, byte order
// and machine every module must share with it (dlopen would refuse another
// anyway, with a message less clear than ours).
const ElfW(Ehdr) * own_header() {
  static const ElfW(Ehdr)* const header = []() -> const ElfW(Ehdr) * {
    Dl_info info;
    if (dladdr(reinterpret_cast<const void*>(&own_header), &info) == 0 || info.dli_fbase == nullptr)
      return nullptr;
    return static_cast<const ElfW(Ehdr)*>(info.dli_fbase);
  }();
  return header;
}

// True when [offset, offset + count * size) lies inside `total` bytes.
bool fits(uint64_t offset, uint64_t count, uint64_t size, uint64_t total) {
  if (offset > total) return false;
  if (size != 0 && count > (total - offset) / size) return false;
  return true;
}

// Checks that `image` is a whole ELF shared object of this host before
// dlopen sees it, so a wrong or cut file is INVALID_ARGUMENT saying what is
// wrong, not a dlopen error or a read past the end of a mapping.
accel_status_t check_elf(const unsigned char* p, size_t n) {
  if (n < SELFMAG || std::memcmp(p, ELFMAG, SELFMAG) != 0)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is not an ELF file (it does not start with "
                "\\x7fELF): a sim module is a host shared object (accel_sim_kernel.h)");
  if (n < sizeof(ElfW(Ehdr)))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is truncated: %zu bytes, less than an ELF "
                "header (%zu bytes)",
                n, sizeof(ElfW(Ehdr)));
  ElfW(Ehdr) eh;
  std::memcpy(&eh, p, sizeof eh);  // the caller's bytes need not be aligned
  const ElfW(Ehdr)* own = own_header();
  const unsigned char own_class = own ? own->e_ident[EI_CLASS] : eh.e_ident[EI_CLASS];
  const unsigned char own_data = own ? own->e_ident[EI_DATA] : eh.e_ident[EI_DATA];
  if (eh.e_ident[EI_CLASS] != own_class)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is a %s ELF file; this host loads %s ones",
                eh.e_ident[EI_CLASS] == ELFCLASS32   ? "32-bit"
                : eh.e_ident[EI_CLASS] == ELFCLASS64 ? "64-bit"
                                                     : "bad-class",
                own_class == ELFCLASS64 ? "64-bit" : "32-bit");
  if (eh.e_ident[EI_DATA] != own_data)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image has byte order %d (EI_DATA); this host's is %d",
                static_cast<int>(eh.e_ident[EI_DATA]), static_cast<int>(own_data));
  if (eh.e_type != ET_DYN)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is an ELF file of type %d, not a shared object "
                "(ET_DYN): build it with -shared -fPIC",
                static_cast<int>(eh.e_type));
  if (own != nullptr && eh.e_machine != own->e_machine)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is built for ELF machine %d; this host is "
                "machine %d",
                static_cast<int>(eh.e_machine), static_cast<int>(own->e_machine));
  if (eh.e_phnum == 0 || eh.e_phentsize != sizeof(ElfW(Phdr)))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image has %d program headers of %d bytes (expected "
                "at least one of %zu)",
                static_cast<int>(eh.e_phnum), static_cast<int>(eh.e_phentsize), sizeof(ElfW(Phdr)));
  if (!fits(eh.e_phoff, eh.e_phnum, eh.e_phentsize, n))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is truncated: its program headers end past its "
                "%zu bytes",
                n);
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    std::memcpy(&ph, p + eh.e_phoff + uint64_t{i} * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && !fits(ph.p_offset, 1, ph.p_filesz, n))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "module_load: the sim_host image is truncated: loadable segment %u ends at "
                  "byte %llu of a %zu-byte image",
                  i, static_cast<unsigned long long>(ph.p_offset + ph.p_filesz), n);
  }
  if (eh.e_shnum != 0 && !fits(eh.e_shoff, eh.e_shnum, eh.e_shentsize, n))
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "module_load: the sim_host image is truncated: its section headers end past its "
                "%zu bytes",
                n);
  return ACCEL_SUCCESS;
}

// Writes the image into an anonymous memory file and returns its fd, so
// dlopen can map it without a path anyone else could swap (no temporary
// file, nothing left behind).
accel_status_t image_fd(const unsigned char* p, size_t n, int& out) {
  int fd = memfd_create("accel-sim-module", MFD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return fail(err == ENOMEM || err == EMFILE || err == ENFILE ? ACCEL_ERROR_OUT_OF_MEMORY
                                                                : ACCEL_ERROR_BACKEND_FAILURE,
                "module_load: memfd_create failed: %s", std::strerror(err));
  }
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int err = w < 0 ? errno : EIO;
      ::close(fd);
      return fail(
          err == ENOMEM || err == ENOSPC ? ACCEL_ERROR_OUT_OF_MEMORY : ACCEL_ERROR_BACKEND_FAILURE,
          "module_load: writing %zu bytes into a memory file failed: %s", n, std::strerror(err));
    }
    done += static_cast<size_t>(w);
  }
  out = fd;
  return ACCEL_SUCCESS;
}

// dlopen()s the memory file `fd` (and closes it: the mapping keeps it
// alive). glibc looks an object up by the name it was opened under before
// it looks at the file, and "/proc/self/fd/N" of a module still loaded,
// whose memory file was closed since, is the same name when N is reused:
// dlopen would return that module. So the name is probed with RTLD_NOLOAD
// first and the file moved to another descriptor number until the name is
// free (no other thread can take the name meanwhile: it would need our open
// descriptor's number). handle NULL with ACCEL_SUCCESS: dlopen failed,
// dl_error says why.
accel_status_t open_fd(int fd, void*& handle, std::string& dl_error) {
  std::vector<int> fds{fd};
  struct CloseAll {
    std::vector<int>& fds;
    ~CloseAll() {
      for (int f : fds) ::close(f);
    }
  } close_all{fds};
  constexpr int kTries = 64;
  std::string path;
  for (int i = 0;; ++i) {
    path = "/proc/self/fd/" + std::to_string(fds.back());
    void* loaded = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (loaded == nullptr) break;
    dlclose(loaded);  // NOLOAD took a reference
    const int next = i < kTries ? fcntl(fd, F_DUPFD_CLOEXEC, fds.back() + 1) : -1;
    if (next < 0) {
      const int err = i < kTries ? errno : EBUSY;
      return fail(err == EMFILE ? ACCEL_ERROR_OUT_OF_MEMORY : ACCEL_ERROR_BACKEND_FAILURE,
                  "module_load: no free name to dlopen the memory file under (%s is taken by a "
                  "loaded module): %s",
                  path.c_str(), std::strerror(err));
    }
    fds.push_back(next);
  }
  dlerror();  // drop the probe's "not loaded" message
  handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    dl_error = why != nullptr ? why : "unknown dlopen error";
  }
  return ACCEL_SUCCESS;
}

// What is wrong with parameter j of kernel `kernel`, "" when sim can pass
// it.
std::string param_problem(const accel_sim_kernel_param_t& prm, uint32_t j, const char* kernel) {
  using accel::plugin::format;
  switch (prm.kind) {
    case ACCEL_KERNEL_ARG_VALUE:
      if (prm.size == 0 || prm.size > kMaxValueBytes)
        return format("parameter %u of kernel '%s' is a value of %u bytes (1 to %u)", j, kernel,
                      prm.size, kMaxValueBytes);
      return {};
    case ACCEL_KERNEL_ARG_DEVICE_POINTER:
    case ACCEL_KERNEL_ARG_LOCAL_MEMORY:
      if (prm.size != 0)
        return format(
            "parameter %u of kernel '%s' is a %s with size %u; only value parameters have a size",
            j, kernel,
            prm.kind == ACCEL_KERNEL_ARG_DEVICE_POINTER ? "device pointer"
                                                        : "local memory parameter",
            prm.size);
      return {};
    default:
      return format(
          "parameter %u of kernel '%s' has kind %u, not an accel_kernel_arg_kind_t (0 value, 1 "
          "device pointer, 2 local memory)",
          j, kernel, prm.kind);
  }
}

// What is wrong with parameter j's type, "" when it fits its kind.
std::string type_problem(const accel_sim_kernel_param_t& prm, uint32_t j, const char* kernel) {
  using accel::plugin::format;
  const uint32_t t = prm.type & ACCEL_PLUGIN_PARAM_TYPE_MASK;
  const uint32_t rest = prm.type & ~ACCEL_PLUGIN_PARAM_TYPE_MASK;
  const bool pointer = prm.kind == ACCEL_KERNEL_ARG_DEVICE_POINTER;
  bool ok = false;
  if (prm.kind == ACCEL_KERNEL_ARG_VALUE)
    ok = rest == 0 &&
         (t == ACCEL_KERNEL_ARG_TYPE_UNKNOWN || t == ACCEL_KERNEL_ARG_TYPE_INT ||
          t == ACCEL_KERNEL_ARG_TYPE_STRUCT ||
          (t == ACCEL_KERNEL_ARG_TYPE_FLOAT && (prm.size == 2 || prm.size == 4 || prm.size == 8)));
  else
    ok = (t == ACCEL_KERNEL_ARG_TYPE_UNKNOWN || (pointer && t == ACCEL_KERNEL_ARG_TYPE_POINTER)) &&
         (rest == 0 || (pointer && rest == ACCEL_PLUGIN_PARAM_READ_ONLY));
  if (ok) return {};
  return format(
      "parameter %u of kernel '%s' has type 0x%x: a value's type is 0 (unknown), 1 (integer), 2 "
      "(float of 2, 4 or 8 bytes) or 4 (struct); a device pointer's 0 or 3, either OR'd with "
      "0x100 (read-only); local memory's 0",
      j, kernel, prm.type);
}

// Version 1 of accel_sim_kernel_param_t: no type.
struct ParamV1 {
  uint32_t kind;
  uint32_t size;
};

// Kernel k's parameters as this version of the format has them; a version
// 1 table's have no type (0, unknown).
std::vector<accel_sim_kernel_param_t> params_of(const accel_sim_kernel_t& k, uint32_t version) {
  std::vector<accel_sim_kernel_param_t> out(k.num_params);
  if (version == 1) {
    const auto* v1 = reinterpret_cast<const ParamV1*>(k.params);
    for (uint32_t j = 0; j < k.num_params; ++j) out[j] = {v1[j].kind, v1[j].size, 0};
  } else {
    out.assign(k.params, k.params + k.num_params);
  }
  return out;
}

// What is wrong with kernel i of the table (its name unique among `names`,
// which it joins), "" when sim can run it.
std::string kernel_problem(const accel_sim_kernel_t& k, uint32_t i,
                           std::set<std::string_view>& names) {
  using accel::plugin::format;
  if (k.name == nullptr || k.name[0] == '\0')
    return format("kernel %u of %s has no name", i, ACCEL_SIM_KERNEL_TABLE_NAME);
  const size_t len = strnlen(k.name, kMaxNameLength + 1);
  if (len > kMaxNameLength)
    return format("kernel %u of %s has a name longer than %zu bytes", i,
                  ACCEL_SIM_KERNEL_TABLE_NAME, kMaxNameLength);
  if (!names.insert(std::string_view(k.name, len)).second)
    return format("%s lists two kernels named '%s'", ACCEL_SIM_KERNEL_TABLE_NAME, k.name);
  if (k.fn == nullptr) return format("kernel '%s' has no function (fn is NULL)", k.name);
  if (k.num_params > kMaxParams)
    return format("kernel '%s' declares %u parameters; sim takes at most %u", k.name, k.num_params,
                  kMaxParams);
  if (k.num_params > 0 && k.params == nullptr)
    return format("kernel '%s' declares %u parameters but its params pointer is NULL", k.name,
                  k.num_params);
  return {};
}

// What is wrong with the parameters of kernel `k` (read by params_of).
std::string params_problem(const std::vector<accel_sim_kernel_param_t>& params,
                           const char* kernel) {
  for (uint32_t j = 0; j < params.size(); ++j) {
    if (std::string why = param_problem(params[j], j, kernel); !why.empty()) return why;
    if (std::string why = type_problem(params[j], j, kernel); !why.empty()) return why;
  }
  return {};
}

// Copies and checks the exported table; a table sim cannot trust is
// BUILD_FAILED, the reason in the log.
accel_status_t read_table(const accel_sim_kernel_table_t& table, accel_plugin_build_log_fn log,
                          void* ctx, std::vector<KernelInfo>& out) {
  using accel::plugin::format;
  if (table.abi_version != ACCEL_SIM_KERNEL_ABI_VERSION && table.abi_version != 1)
    return build_failed(
        log, ctx,
        format("%s has abi_version %u; sim reads versions 1 and %u (accel_sim_kernel.h)",
               ACCEL_SIM_KERNEL_TABLE_NAME, table.abi_version, ACCEL_SIM_KERNEL_ABI_VERSION));
  if (table.count > 0 && table.kernels == nullptr)
    return build_failed(log, ctx,
                        format("%s lists %u kernels but its kernels pointer is NULL",
                               ACCEL_SIM_KERNEL_TABLE_NAME, table.count));
  std::set<std::string_view> names;
  out.reserve(table.count);
  for (uint32_t i = 0; i < table.count; ++i) {
    const accel_sim_kernel_t& k = table.kernels[i];
    if (std::string why = kernel_problem(k, i, names); !why.empty())
      return build_failed(log, ctx, why);
    std::vector<accel_sim_kernel_param_t> params = params_of(k, table.abi_version);
    if (std::string why = params_problem(params, k.name); !why.empty())
      return build_failed(log, ctx, why);
    KernelInfo info;
    info.name.assign(k.name);
    info.fn = k.fn;
    info.max_threads_per_block = k.max_threads_per_block == 0 ? kMaxThreadsPerBlock
                                 : k.max_threads_per_block < kMaxThreadsPerBlock
                                     ? k.max_threads_per_block
                                     : kMaxThreadsPerBlock;
    info.params = std::move(params);
    for (const accel_sim_kernel_param_t& p : info.params)
      if (p.kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY) info.has_local_params = true;
    out.push_back(std::move(info));
  }
  return ACCEL_SUCCESS;
}

}  // namespace

// Only the host format: sim devices run host code.
accel_status_t op_module_formats(int32_t device, uint64_t* formats) {
  return guarded("module_formats", [&] {
    if (formats == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_formats: formats is NULL");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    *formats = ACCEL_MODULE_FORMAT_BIT(ACCEL_MODULE_FORMAT_SIM_HOST);
    return ACCEL_SUCCESS;
  });
}

// Loads a sim_host image: ELF checks (INVALID_ARGUMENT), then dlopen from a
// memory file (BUILD_FAILED with dlerror() in the log), then the table
// (BUILD_FAILED naming what is wrong, also in the log). On any failure
// nothing stays loaded. The shared object's constructors run in this
// process: a sim module is trusted host code (README.md, "Modules").
accel_status_t op_module_load(int32_t device, const accel_module_image_t* image,
                              const char* options, accel_plugin_build_log_fn log, void* log_context,
                              accel_plugin_module_t* module) {
  return guarded("module_load", [&] {
    if (image == nullptr || module == nullptr || image->data == nullptr || image->size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_load: NULL or empty image or module");
    Device* dev;
    if (accel_status_t st = device_at(device, dev); st != ACCEL_SUCCESS) return st;
    if (image->format != ACCEL_MODULE_FORMAT_SIM_HOST)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "module_load: sim loads only sim_host images, not format %d",
                  static_cast<int>(image->format));
    if (options != nullptr && options[0] != '\0')
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "module_load: sim takes no build options (got \"%s\"): a sim module is "
                  "already compiled",
                  options);
    const auto* bytes = static_cast<const unsigned char*>(image->data);
    if (accel_status_t st = check_elf(bytes, image->size); st != ACCEL_SUCCESS) return st;

    int fd = -1;
    if (accel_status_t st = image_fd(bytes, image->size, fd); st != ACCEL_SUCCESS) return st;
    void* handle = nullptr;
    std::string dl_error;
    const accel_status_t opened = open_fd(fd, handle, dl_error);
    if (opened != ACCEL_SUCCESS) return opened;
    if (handle == nullptr)
      return build_failed(log, log_context, "dlopen of the shared object failed: " + dl_error);

    // From here on, close the object on every failure.
    struct Closer {
      void* h;
      ~Closer() {
        if (h != nullptr) dlclose(h);
      }
    } closer{handle};
    dlerror();  // clear, so a NULL symbol value is told from a missing one
    const auto* table =
        static_cast<const accel_sim_kernel_table_t*>(dlsym(handle, ACCEL_SIM_KERNEL_TABLE_NAME));
    if (table == nullptr) {
      const char* e = dlerror();
      return build_failed(
          log, log_context,
          accel::plugin::format(
              "the shared object exports no symbol '%s' (accel_sim_kernel.h: "
              "a sim module exports an accel_sim_kernel_table_t of that name)%s%s",
              ACCEL_SIM_KERNEL_TABLE_NAME, e != nullptr ? ": " : "", e != nullptr ? e : ""));
    }
    auto m = std::make_unique<Module>();
    m->device = device;
    if (accel_status_t st = read_table(*table, log, log_context, m->kernels); st != ACCEL_SUCCESS)
      return st;
    m->handle = handle;
    closer.h = nullptr;
    accel::plugin::log(ACCEL_LOG_DEBUG, "sim device %d: loaded a module of %zu kernel(s)",
                       static_cast<int>(device), m->kernels.size());
    *module = m.release();
    return ACCEL_SUCCESS;
  });
}

// The core has destroyed the module's kernels and synchronized the device,
// so no queued launch still calls into the shared object.
accel_status_t op_module_unload(accel_plugin_module_t module) {
  return guarded("module_unload", [&] {
    if (module == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "module_unload: NULL module");
    std::unique_ptr<Module> m(as_module(module));
    if (m->handle != nullptr && dlclose(m->handle) != 0) {
      const char* e = dlerror();
      return fail(ACCEL_ERROR_BACKEND_FAILURE, "module_unload: dlclose failed: %s",
                  e != nullptr ? e : "unknown error");
    }
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_kernel_create(accel_plugin_module_t module, const char* name,
                                accel_plugin_kernel_t* kernel) {
  return guarded("kernel_create", [&] {
    if (module == nullptr || name == nullptr || kernel == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_create: NULL argument");
    const Module* m = as_module(module);
    for (const KernelInfo& k : m->kernels) {
      if (k.name == name) {
        *kernel = new Kernel{m, &k};
        return ACCEL_SUCCESS;
      }
    }
    std::string known;
    for (const KernelInfo& k : m->kernels) known += (known.empty() ? "" : ", ") + k.name;
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "kernel_create: no kernel '%s' in the module (it has %s)", name,
                known.empty() ? "none" : known.c_str());
  });
}

accel_status_t op_kernel_destroy(accel_plugin_kernel_t kernel) {
  return guarded("kernel_destroy", [&] {
    if (kernel == nullptr) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_destroy: NULL kernel");
    delete as_kernel(kernel);
    return ACCEL_SUCCESS;
  });
}

// What a sim kernel needs: no static shared memory (a work-group function
// has only what the launch passes), one "thread" per loop iteration, so
// registers and private memory mean nothing (-1, unknown).
accel_status_t op_kernel_get_attributes(accel_plugin_kernel_t kernel,
                                        accel_kernel_attributes_t* attributes) {
  return guarded("kernel_get_attributes", [&] {
    if (kernel == nullptr || attributes == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_get_attributes: NULL argument");
    if (attributes->struct_size < sizeof(accel_kernel_attributes_t))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "kernel_get_attributes: struct_size %zu is smaller than %zu",
                  attributes->struct_size, sizeof(accel_kernel_attributes_t));
    const KernelInfo& k = *as_kernel(kernel)->info;
    attributes->max_threads_per_block = k.max_threads_per_block;
    attributes->static_shared_bytes = 0;
    attributes->private_bytes = -1;
    attributes->num_registers = -1;
    attributes->preferred_block_multiple = 1;
    attributes->num_args = static_cast<int32_t>(k.params.size());
    return ACCEL_SUCCESS;
  });
}

// The table's parameters. LOCAL_MEMORY arguments are parameters on sim (a
// pointer to the block's buffer), so flags is 0.
accel_status_t op_kernel_get_params(accel_plugin_kernel_t kernel,
                                    accel_plugin_kernel_param_t* params, size_t capacity,
                                    size_t* count, uint32_t* flags) {
  return guarded("kernel_get_params", [&] {
    if (kernel == nullptr || count == nullptr || flags == nullptr ||
        (params == nullptr && capacity > 0))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "kernel_get_params: NULL argument");
    const KernelInfo& k = *as_kernel(kernel)->info;
    *count = k.params.size();
    *flags = 0;
    for (size_t i = 0; i < k.params.size() && i < capacity; ++i) {
      params[i].kinds = ACCEL_PLUGIN_ARG_KIND_BIT(k.params[i].kind);
      params[i].type = k.params[i].type;
      params[i].size = k.params[i].kind == ACCEL_KERNEL_ARG_VALUE ? k.params[i].size : 0;
    }
    return ACCEL_SUCCESS;
  });
}

}  // namespace accel::sim
