// launch.cpp - launch_kernel: check the launch against the simulated
// device's limits and the kernel's parameters, copy the arguments, and queue
// one task on the stream that calls the kernel's work-group function once
// per block of the grid (accel_sim_kernel.h). A task like a copy or a host
// function, so kernels are ordered with them, with events and with waits.
#include "backend.hpp"

#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace accel::sim {

namespace {

constexpr size_t kSlotAlignment = 16;  // each argument's bytes (accel_sim_kernel.h)

constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// One queued launch, in one allocation (launches are the hot path): this
// header, then argv (the kernel's array of pointers to its arguments), then
// one kSlotAlignment-aligned slot per argument holding what argv[i] points
// at: VALUE the value's bytes, DEVICE_POINTER the pointer, LOCAL_MEMORY the
// block's buffer (the slot holds its offset in the block's local memory
// until the launch runs). An implicit-lifetime type: operator new's bytes
// are one, and freeing them with Launch::free ends it.
struct alignas(kSlotAlignment) Launch {
  const KernelInfo* kernel;  // its module stays loaded while launches are queued
  accel_sim_kernel_context_t ctx;
  size_t local_bytes;    // the block's local memory: LOCAL arguments, then shared_bytes
  size_t shared_offset;  // where shared_bytes start in it
  size_t num_args;

  // argv's entries, rounded up to keep the slots after it aligned.
  static size_t argv_bytes(size_t n) { return round_up(n * sizeof(void*), kSlotAlignment); }
  void** argv() { return reinterpret_cast<void**>(this + 1); }
  unsigned char* slots() {
    return reinterpret_cast<unsigned char*>(this + 1) + argv_bytes(num_args);
  }

  static void free(Launch* l) { ::operator delete(l); }
  struct Free {
    void operator()(Launch* l) const { free(l); }
  };
};
static_assert(std::is_trivially_destructible_v<Launch>);
static_assert(alignof(Launch) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
              "operator new must align the launch's slots");
using LaunchPtr = std::unique_ptr<Launch, Launch::Free>;

const char* dim_name(int d) { return d == 0 ? "x" : d == 1 ? "y" : "z"; }

// The device's grid and block limits and the kernel's own block limit.
accel_status_t check_shape(const KernelInfo& k, accel_dim3_t grid, accel_dim3_t block) {
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  const uint32_t b[3] = {block.x, block.y, block.z};
  for (int d = 0; d < 3; ++d) {
    if (b[d] == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s': block %s is 0 (each extent must be >= 1)",
                  k.name.c_str(), dim_name(d));
    if (b[d] > kMaxBlockDim[d])
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s': block %s is %u; sim devices allow at most %u "
                  "(max block dimensions %u x %u x %u)",
                  k.name.c_str(), dim_name(d), b[d], kMaxBlockDim[d], kMaxBlockDim[0],
                  kMaxBlockDim[1], kMaxBlockDim[2]);
    if (g[d] > kMaxGridDim[d])
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s': grid %s is %u; sim devices allow at most %u "
                  "(max grid dimensions %u x %u x %u)",
                  k.name.c_str(), dim_name(d), g[d], kMaxGridDim[d], kMaxGridDim[0], kMaxGridDim[1],
                  kMaxGridDim[2]);
  }
  const uint64_t threads = uint64_t{b[0]} * b[1] * b[2];
  if (threads > k.max_threads_per_block)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "launch_kernel: kernel '%s': block (%u, %u, %u) has %llu threads; its max threads "
                "per block on sim is %u",
                k.name.c_str(), b[0], b[1], b[2], static_cast<unsigned long long>(threads),
                k.max_threads_per_block);
  return ACCEL_SUCCESS;
}

// The arguments against the kernel's table (the core checked them already
// when it could; a kernel reading a missing argument would read garbage).
accel_status_t check_args(const KernelInfo& k, const accel_kernel_arg_t* args, size_t num_args) {
  if (num_args != k.params.size())
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "launch_kernel: kernel '%s' takes %zu parameters; the launch passes %zu",
                k.name.c_str(), k.params.size(), num_args);
  if (num_args > 0 && args == nullptr)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_kernel: args is NULL with num_args %zu",
                num_args);
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    const accel_sim_kernel_param_t& p = k.params[i];
    int kind = 0;  // the enum's bits: a C caller may pass any int
    static_assert(sizeof kind == sizeof a.kind);
    std::memcpy(&kind, &a.kind, sizeof kind);
    if (static_cast<uint32_t>(kind) != p.kind)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s' argument %zu has kind %d; parameter %zu takes "
                  "kind %u",
                  k.name.c_str(), i, kind, i, p.kind);
    if (kind == ACCEL_KERNEL_ARG_VALUE && (a.size != p.size || a.value == nullptr))
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s' argument %zu is a value of %zu bytes at %p; "
                  "parameter %zu takes %u bytes",
                  k.name.c_str(), i, a.size, a.value, i, p.size);
    if (kind == ACCEL_KERNEL_ARG_LOCAL_MEMORY && a.size == 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s' argument %zu: local memory of 0 bytes",
                  k.name.c_str(), i);
  }
  return ACCEL_SUCCESS;
}

// Sizes the block's local memory (OUT_OF_MEMORY over kSharedMemoryPerBlock)
// and copies the arguments into a new Launch.
accel_status_t prepare(const KernelInfo& k, accel_dim3_t grid, accel_dim3_t block,
                       size_t shared_bytes, const accel_kernel_arg_t* args, size_t num_args,
                       LaunchPtr& out) {
  // Saturating sums: a size near SIZE_MAX must not wrap into a small one.
  size_t local = 0;
  bool saturated = false;
  size_t slot_bytes = 0;  // bounded: values are at most kMaxValueBytes (modules.cpp)
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    slot_bytes +=
        round_up(a.kind == ACCEL_KERNEL_ARG_VALUE ? a.size : sizeof(void*), kSlotAlignment);
    if (a.kind != ACCEL_KERNEL_ARG_LOCAL_MEMORY) continue;
    const size_t n = a.size > kSharedMemoryPerBlock ? a.size : round_up(a.size, kLocalAlignment);
    if (__builtin_add_overflow(local, n, &local)) saturated = true;
  }
  size_t need = 0;
  if (saturated || __builtin_add_overflow(local, shared_bytes, &need)) saturated = true;
  if (saturated || need > kSharedMemoryPerBlock)
    return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                "launch_kernel: kernel '%s' needs %s%zu bytes of local memory per block (local "
                "memory arguments, each rounded up to %zu bytes, plus shared_bytes %zu); sim "
                "devices have %zu (48 KiB)",
                k.name.c_str(), saturated ? "more than " : "", saturated ? SIZE_MAX : need,
                kLocalAlignment, shared_bytes, kSharedMemoryPerBlock);

  LaunchPtr L(static_cast<Launch*>(
      ::operator new(sizeof(Launch) + Launch::argv_bytes(num_args) + slot_bytes)));
  L->kernel = &k;
  L->ctx = accel_sim_kernel_context_t{};
  L->ctx.grid[0] = grid.x;
  L->ctx.grid[1] = grid.y;
  L->ctx.grid[2] = grid.z;
  L->ctx.block[0] = block.x;
  L->ctx.block[1] = block.y;
  L->ctx.block[2] = block.z;
  L->ctx.shared_bytes = shared_bytes;
  L->local_bytes = need;
  L->shared_offset = local;
  L->num_args = num_args;
  void** argv = L->argv();
  unsigned char* slot = L->slots();
  size_t local_offset = 0;
  for (size_t i = 0; i < num_args; ++i) {
    const accel_kernel_arg_t& a = args[i];
    argv[i] = slot;
    switch (a.kind) {
      case ACCEL_KERNEL_ARG_VALUE:
        std::memcpy(slot, a.value, a.size);
        slot += round_up(a.size, kSlotAlignment);
        break;
      case ACCEL_KERNEL_ARG_DEVICE_POINTER: {
        // Sim device memory is host memory: the kernel dereferences it.
        const void* p = a.value;
        std::memcpy(slot, &p, sizeof p);
        slot += kSlotAlignment;
        break;
      }
      default:  // LOCAL_MEMORY (check_args allowed nothing else)
        std::memcpy(slot, &local_offset, sizeof local_offset);
        local_offset += round_up(a.size, kLocalAlignment);
        slot += kSlotAlignment;
        break;
    }
  }
  out = std::move(L);
  return ACCEL_SUCCESS;
}

// Runs on the stream's worker: every block of the grid, x fastest, each
// with the same local memory (the previous block is done with it).
void run(Launch& L, Stream* queue) {
  unsigned char* local = nullptr;
  if (L.local_bytes > 0) {
    local = static_cast<unsigned char*>(queue->worker_scratch(L.local_bytes));
    if (local == nullptr) {
      accel::plugin::log(ACCEL_LOG_ERROR,
                         "a kernel launch on sim device %d was skipped: the host has no %zu "
                         "bytes for its local memory",
                         static_cast<int>(queue->device()), L.local_bytes);
      return;
    }
    const std::vector<accel_sim_kernel_param_t>& params = L.kernel->params;
    for (size_t i = 0; i < L.num_args; ++i) {
      if (params[i].kind != ACCEL_KERNEL_ARG_LOCAL_MEMORY) continue;
      size_t offset = 0;
      std::memcpy(&offset, L.argv()[i], sizeof offset);
      void* p = local + offset;
      std::memcpy(L.argv()[i], &p, sizeof p);
    }
  }
  accel_sim_kernel_context_t& ctx = L.ctx;
  ctx.shared = ctx.shared_bytes > 0 ? local + L.shared_offset : nullptr;
  const accel_sim_kernel_fn fn = L.kernel->fn;
  void* const* argv = L.num_args > 0 ? L.argv() : nullptr;
  for (uint32_t z = 0; z < ctx.grid[2]; ++z) {
    ctx.group_id[2] = z;
    for (uint32_t y = 0; y < ctx.grid[1]; ++y) {
      ctx.group_id[1] = y;
      for (uint32_t x = 0; x < ctx.grid[0]; ++x) {
        ctx.group_id[0] = x;
        fn(&ctx, argv);
      }
    }
  }
}

}  // namespace

// Everything is checked and copied before the task is queued, so a refused
// launch queues nothing and the caller's arrays may go once this returns.
accel_status_t op_launch_kernel(accel_plugin_kernel_t kernel, accel_dim3_t grid, accel_dim3_t block,
                                size_t shared_bytes, const accel_kernel_arg_t* args,
                                size_t num_args, accel_plugin_stream_t stream) {
  return guarded("launch_kernel", [&] {
    if (kernel == nullptr || stream == nullptr)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "launch_kernel: NULL %s",
                  kernel == nullptr ? "kernel" : "stream");
    const Kernel& kh = *as_kernel(kernel);
    const KernelInfo& k = *kh.info;
    Stream* s = as_stream(stream);
    if (s->device() != kh.module->device)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "launch_kernel: kernel '%s' is loaded on sim device %d, the stream is on sim "
                  "device %d",
                  k.name.c_str(), static_cast<int>(kh.module->device),
                  static_cast<int>(s->device()));
    if (accel_status_t st = check_shape(k, grid, block); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = check_args(k, args, num_args); st != ACCEL_SUCCESS) return st;
    // OpenCL backends have no dynamic shared memory beside __local
    // parameters and refuse shared_bytes; a kernel written that way is
    // refused here too, so a launch that passes on sim passes there.
    if (shared_bytes > 0 && k.has_local_params)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                  "launch_kernel: kernel '%s' takes local memory parameters (OpenCL-style "
                  "__local) and the launch asks for shared_bytes %zu: OpenCL backends have no "
                  "dynamic shared memory beside such parameters and refuse it, so sim does; pass "
                  "the memory as the kernel's LOCAL_MEMORY arguments (accel::LocalMemory)",
                  k.name.c_str(), shared_bytes);
    LaunchPtr launch;
    if (accel_status_t st = prepare(k, grid, block, shared_bytes, args, num_args, launch);
        st != ACCEL_SUCCESS)
      return st;
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return ACCEL_SUCCESS;  // nothing to run
    // The task holds the launch by plain pointer (two pointers: std::function
    // keeps them without an allocation of its own) and frees it once run;
    // until the queue has taken the task, `launch` still owns it, so a
    // refused or failed enqueue frees it here. Queued tasks always run:
    // shutdown drains the queue.
    Launch* raw = launch.get();
    Stream* queue = s->queue();
    const accel_status_t st = submit(s, "launch_kernel", [raw, queue] {
      LaunchPtr owned(raw);
      run(*owned, queue);
    });
    if (st == ACCEL_SUCCESS) (void)launch.release();
    return st;
  });
}

}  // namespace accel::sim
