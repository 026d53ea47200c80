// Device memory: coarse-grained shared virtual memory (clSVMAlloc).
//
// An SVM allocation is a plain pointer valid in the device's context, which
// is what accel's API hands out. Devices without SVM (CL_DEVICE_SVM_CAPABILITIES
// lacks CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, e.g. OpenCL 1.x or a 3.0 device
// that opted out) report ACCEL_ERROR_NOT_SUPPORTED for allocation; streams
// and events still work on them.
//
// Every allocation is recorded (base, size, device) so copies and fills can
// check that device pointers lie inside a live allocation of the stream's
// device. Host memory given to the async copies must stay valid and unchanged
// until the copy completes (the caller's obligation, as in accel.h).
//
// mem_get_info: total is CL_DEVICE_GLOBAL_MEM_SIZE; free comes from
// CL_DEVICE_GLOBAL_FREE_MEMORY_AMD where the device has
// cl_amd_device_attribute_query, else it is an estimate: total minus the
// bytes allocated through this plugin (other processes are not seen).
//
// ABI 1.1 host memory. Every device has a context of its own, and OpenCL
// makes an SVM pointer of one context undefined in another context's
// clEnqueueSVMMemcpy, while accel's pinned memory must serve every device.
// So host_alloc gives fine-grained SVM (CL_MEM_SVM_FINE_GRAIN_BUFFER: plain
// host-accessible memory the driver can copy from directly) when the backend
// lists exactly one device and it supports that, and otherwise anonymous
// page-aligned memory locked with mlock (ordinary host memory to every
// context; the lock is best effort, see README.md). Coarse-grained SVM is
// never used for it: the host may touch it only between clEnqueueSVMMap and
// unmap. host_register cannot pin foreign memory in OpenCL: it succeeds and
// changes nothing (copies from it are copies from pageable memory).
//
// Peer copies: no device reaches another's memory, so memcpy_peer_async is
// a step in stream order (a host function of the plugin's, see hostfn.cpp)
// that copies through a host buffer, blocking, on the plugin's staging
// queues of the two devices.
#include "backend.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace accel::opencl {
namespace {

struct Alloc {
  size_t size;
  Device* dev;
};

// Live allocations of one kind by address, under mu. Never destroyed, so
// it is usable until the process ends.
template <class Entry>
struct AllocRegistry {
  std::mutex mu;
  std::map<uintptr_t, Entry> allocs;

  static AllocRegistry& instance() {
    static auto* r = new AllocRegistry();
    return *r;
  }
};

AllocRegistry<Alloc>& registry() { return AllocRegistry<Alloc>::instance(); }

// Checks that [p, p+bytes) is inside a live allocation of `dev`; `whose`
// says where dev comes from ("the stream is on").
accel_status_t check_device_range(const Device* dev, const void* p, size_t bytes, const char* role,
                                  const char* whose) {
  if (!p) return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s is NULL", role);
  auto addr = reinterpret_cast<uintptr_t>(p);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.allocs.upper_bound(addr);
  if (it == r.allocs.begin())
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s %p is not inside a live allocation of OpenCL %s",
                role, p, dev->label().c_str());
  --it;
  uintptr_t base = it->first;
  const Alloc& a = it->second;
  size_t offset = addr - base;
  if (offset >= a.size)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s %p is not inside a live allocation of OpenCL %s",
                role, p, dev->label().c_str());
  if (a.dev != dev)
    return fail(ACCEL_ERROR_DEVICE_MISMATCH, "%s %p belongs to OpenCL %s but %s OpenCL %s", role, p,
                a.dev->label().c_str(), whose, dev->label().c_str());
  if (bytes > a.size - offset)
    return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                "%s range [%p, +%zu) runs past the end of its allocation [%p, +%zu) on %s", role, p,
                bytes, reinterpret_cast<void*>(base), a.size, dev->label().c_str());
  return ACCEL_SUCCESS;
}

// The same against the stream's device.
accel_status_t check_range(const Stream* s, const void* p, size_t bytes, const char* role) {
  return check_device_range(s->dev, p, bytes, role, "the stream is on");
}

}  // namespace

bool svm_allocation_of(const void* p, void** base, size_t* size) {
  auto addr = reinterpret_cast<uintptr_t>(p);
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.allocs.upper_bound(addr);
  if (it == r.allocs.begin()) return false;
  --it;
  if (addr - it->first >= it->second.size) return false;
  *base = reinterpret_cast<void*>(it->first);
  *size = it->second.size;
  return true;
}

accel_status_t op_mem_alloc(int32_t device, size_t bytes, void** ptr) {
  return on_device("mem_alloc", device, [&](Device* dev) -> accel_status_t {
    if (!(dev->svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER))
      return fail(ACCEL_ERROR_NOT_SUPPORTED,
                  "mem_alloc: OpenCL %s has no shared virtual memory (CL_DEVICE_SVM_CAPABILITIES "
                  "0x%llx, %s); the opencl backend allocates device memory with clSVMAlloc only",
                  dev->label().c_str(), static_cast<unsigned long long>(dev->svm),
                  dev->version.c_str());
    if (dev->max_alloc && bytes > dev->max_alloc)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "mem_alloc: %zu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE (%llu) of %s", bytes,
                  static_cast<unsigned long long>(dev->max_alloc), dev->label().c_str());
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    void* p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
    if (!p)
      return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                  "clSVMAlloc(CL_MEM_READ_WRITE, %zu bytes) returned NULL on %s (clSVMAlloc "
                  "reports no error code; the device is most likely out of memory)",
                  bytes, dev->label().c_str());
    try {
      auto& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      r.allocs.emplace(reinterpret_cast<uintptr_t>(p), Alloc{bytes, dev});
      dev->bytes_allocated += bytes;
    } catch (...) {
      clSVMFree(ctx, p);
      throw;
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_mem_free(int32_t device, void* ptr) {
  return on_device("mem_free", device, [&](Device* dev) -> accel_status_t {
    auto& r = registry();
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.allocs.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == r.allocs.end())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "mem_free: %p is not a live allocation of the opencl backend", ptr);
      if (it->second.dev != dev)
        return fail(ACCEL_ERROR_DEVICE_MISMATCH, "mem_free: %p belongs to OpenCL %s, not %s", ptr,
                    it->second.dev->label().c_str(), dev->label().c_str());
      dev->bytes_allocated -= it->second.size;
      r.allocs.erase(it);
    }
    // The context exists: the allocation was made in it.
    cl_context ctx = nullptr;
    if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
    clSVMFree(ctx, ptr);  // returns nothing; the caller has synchronised
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_memcpy_async(void* dst, const void* src, size_t bytes, accel_memcpy_kind_t kind,
                               accel_plugin_stream_t stream) {
  return guarded("memcpy_async", [&]() -> accel_status_t {
    auto* s = stream_of(stream);
    if (!dst || !src)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: %s is NULL", !dst ? "dst" : "src");
    accel_status_t st = ACCEL_SUCCESS;
    switch (kind) {
      case ACCEL_MEMCPY_HOST_TO_DEVICE:
        st = check_range(s, dst, bytes, "destination");
        break;
      case ACCEL_MEMCPY_DEVICE_TO_HOST:
        st = check_range(s, src, bytes, "source");
        break;
      case ACCEL_MEMCPY_DEVICE_TO_DEVICE:
        st = check_range(s, dst, bytes, "destination");
        if (st == ACCEL_SUCCESS) st = check_range(s, src, bytes, "source");
        break;
      default:
        return fail(ACCEL_ERROR_INVALID_ARGUMENT, "memcpy_async: unknown copy kind %d",
                    static_cast<int>(kind));
    }
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    if (s->recording) {
      // A graph records copies within device memory only: host memory has no
      // buffer that is certain to be the memory itself (README.md, "Graphs").
      if (kind != ACCEL_MEMCPY_DEVICE_TO_DEVICE)
        return fail(ACCEL_ERROR_NOT_SUPPORTED, "graph recording: host copies are re-issued");
      return graph_record_copy(s->recording, dst, src, bytes);
    }
    return stream_enqueue(s, Op::copy(dst, src, bytes));
  });
}

accel_status_t op_memset_async(void* dst, int value, size_t bytes, accel_plugin_stream_t stream) {
  return guarded("memset_async", [&]() -> accel_status_t {
    auto* s = stream_of(stream);
    accel_status_t st = check_range(s, dst, bytes, "destination");
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    if (s->recording)
      return graph_record_fill(s->recording, dst, static_cast<cl_uchar>(value), bytes);
    Op op;
    op.kind = Op::Fill;
    op.dst = dst;
    op.pattern = static_cast<cl_uchar>(value);  // the enqueue copies the pattern
    op.bytes = bytes;
    return stream_enqueue(s, std::move(op));
  });
}

accel_status_t op_mem_get_info(int32_t device, size_t* free_bytes, size_t* total_bytes) {
  return on_device("mem_get_info", device, [&](Device* dev) -> accel_status_t {
    size_t total = static_cast<size_t>(dev->global_mem);
    size_t free = 0;
    bool from_vendor = false;
    if (dev->amd_free_memory) {
      size_t kb[2] = {0, 0};  // total free, largest free block; in KiB
      cl_int err =
          clGetDeviceInfo(dev->id, CL_DEVICE_GLOBAL_FREE_MEMORY_AMD, sizeof kb, kb, nullptr);
      if (err == CL_SUCCESS) {
        free = kb[0] * 1024;
        from_vendor = true;
      } else {
        log_vendor_failure(ACCEL_LOG_DEBUG, "clGetDeviceInfo(CL_DEVICE_GLOBAL_FREE_MEMORY_AMD)",
                           err, "(estimating instead)");
      }
    }
    if (!from_vendor) {
      auto& r = registry();
      std::lock_guard<std::mutex> lock(r.mu);
      free = dev->bytes_allocated < total ? total - dev->bytes_allocated : 0;
    }
    if (free_bytes) *free_bytes = free;
    if (total_bytes) *total_bytes = total;
    return ACCEL_SUCCESS;
  });
}

// ---------------------------------------------------------------------------
// ABI 1.1: pinned host memory, registration, peer copies.
// ---------------------------------------------------------------------------

namespace {

struct HostAlloc {
  size_t size = 0;        // bytes asked for
  size_t mapped = 0;      // bytes mapped (mmap'd memory), 0 for SVM
  Device* svm = nullptr;  // the device whose context made it (fine-grained SVM)
};

AllocRegistry<HostAlloc>& host_registry() { return AllocRegistry<HostAlloc>::instance(); }

// The one device fine-grained SVM may come from, or null (see the top).
Device* svm_host_device(size_t bytes) {
  std::vector<Device*>* devs = nullptr;
  if (enumerate(devs) != ACCEL_SUCCESS || devs->size() != 1) return nullptr;
  Device* dev = devs->front();
  if (!(dev->svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER)) return nullptr;
  if (dev->max_alloc && bytes > dev->max_alloc) return nullptr;
  return dev;
}

}  // namespace

accel_status_t op_host_alloc(size_t bytes, uint32_t flags, void** ptr) {
  return guarded("host_alloc", [&]() -> accel_status_t {
    if (flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_alloc: unknown flags 0x%x",
                  static_cast<unsigned>(flags));
    HostAlloc a;
    a.size = bytes;
    void* p = nullptr;
    if (Device* dev = svm_host_device(bytes)) {
      cl_context ctx = nullptr;
      if (accel_status_t st = device_context(dev, &ctx); st != ACCEL_SUCCESS) return st;
      p = clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, bytes, 0);
      if (!p)
        return fail(ACCEL_ERROR_OUT_OF_MEMORY,
                    "clSVMAlloc(CL_MEM_SVM_FINE_GRAIN_BUFFER, %zu bytes) returned NULL on %s "
                    "(clSVMAlloc reports no error code; most likely out of memory)",
                    bytes, dev->label().c_str());
      a.svm = dev;
    } else {
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      if (bytes > SIZE_MAX - page)
        return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host_alloc: %zu bytes cannot be mapped", bytes);
      a.mapped = (bytes + page - 1) / page * page;
      p = mmap(nullptr, a.mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return fail(ACCEL_ERROR_OUT_OF_MEMORY, "host_alloc: mmap of %zu bytes failed: %s", a.mapped,
                    std::strerror(errno));
      if (mlock(p, a.mapped) != 0) {
        // RLIMIT_MEMLOCK without CAP_IPC_LOCK: the memory still works, only
        // the kernel may page it out.
        accel::plugin::log(ACCEL_LOG_DEBUG,
                           "host_alloc: mlock of %zu bytes failed (%s); the memory is not "
                           "page-locked",
                           a.mapped, std::strerror(errno));
      }
    }
    try {
      auto& r = host_registry();
      std::lock_guard<std::mutex> lock(r.mu);
      r.allocs.emplace(reinterpret_cast<uintptr_t>(p), a);
    } catch (...) {
      if (a.svm)
        clSVMFree(a.svm->context, p);
      else
        munmap(p, a.mapped);
      throw;
    }
    *ptr = p;
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_free(void* ptr) {
  return guarded("host_free", [&]() -> accel_status_t {
    HostAlloc a;
    {
      auto& r = host_registry();
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.allocs.find(reinterpret_cast<uintptr_t>(ptr));
      if (it == r.allocs.end())
        return fail(ACCEL_ERROR_INVALID_ARGUMENT,
                    "host_free: %p is not a live host_alloc allocation of the opencl backend", ptr);
      a = it->second;
      r.allocs.erase(it);
    }
    if (a.svm) {
      clSVMFree(a.svm->context, ptr);         // returns nothing; the caller has synchronised
    } else if (munmap(ptr, a.mapped) != 0) {  // also unlocks
      return fail(ACCEL_ERROR_BACKEND_FAILURE, "host_free: munmap of %p (%zu bytes) failed: %s",
                  ptr, a.mapped, std::strerror(errno));
    }
    return ACCEL_SUCCESS;
  });
}

// OpenCL pins only memory it allocates itself (and only for its own
// context): registering foreign memory is accepted and changes nothing.
accel_status_t op_host_register(void* ptr, size_t bytes, uint32_t flags) {
  return guarded("host_register", [&]() -> accel_status_t {
    if (flags != 0)
      return fail(ACCEL_ERROR_INVALID_ARGUMENT, "host_register: unknown flags 0x%x",
                  static_cast<unsigned>(flags));
    accel::plugin::log(ACCEL_LOG_DEBUG,
                       "host_register(%p, %zu): OpenCL cannot pin memory it did not allocate; "
                       "copies from it stay pageable copies",
                       ptr, bytes);
    return ACCEL_SUCCESS;
  });
}

accel_status_t op_host_unregister(void* ptr) {
  return guarded("host_unregister", [&]() -> accel_status_t {
    (void)ptr;
    return ACCEL_SUCCESS;
  });
}

namespace {

// Bytes staged per round trip through the host buffer of a peer copy.
constexpr size_t kPeerChunk = size_t{4} << 20;

struct PeerCopy {
  Stream* stream = nullptr;         // kept alive by the step (the task's reference)
  cl_command_queue from = nullptr;  // staging queue of the source device
  cl_command_queue to = nullptr;    // staging queue of the destination device
  char* dst = nullptr;
  const char* src = nullptr;
  size_t bytes = 0;
};

void discard_peer_copy(void* p) { delete static_cast<PeerCopy*>(p); }

void peer_copy_failed(Stream* s, const char* call, cl_int err) {
  std::string msg =
      "memcpy_peer_async (staged): " +
      accel::plugin::vendor_failure_message(call, cl_error_name(err), err, cl_error_text(err));
  std::lock_guard<std::mutex> lock(s->mu);
  stream_defer_error(s, status_of(err), msg);
}

// Runs in stream order on a plugin worker while the stream is held back:
// source -> host buffer on the source's staging queue, host buffer ->
// destination on the destination's, both blocking, chunk by chunk.
void peer_copy_step(void* p) {
  std::unique_ptr<PeerCopy> c(static_cast<PeerCopy*>(p));
  std::unique_ptr<char[]> buf;
  const size_t chunk = std::min(c->bytes, kPeerChunk);
  try {
    buf.reset(new char[chunk]);
  } catch (...) {
    std::lock_guard<std::mutex> lock(c->stream->mu);
    stream_defer_error(c->stream, ACCEL_ERROR_OUT_OF_MEMORY,
                       format("memcpy_peer_async (staged): no host buffer of %zu bytes", chunk));
    return;
  }
  for (size_t off = 0; off < c->bytes; off += chunk) {
    const size_t n = std::min(chunk, c->bytes - off);
    cl_int err =
        clEnqueueSVMMemcpy(c->from, CL_TRUE, buf.get(), c->src + off, n, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      return peer_copy_failed(c->stream, "clEnqueueSVMMemcpy (source to host)", err);
    err = clEnqueueSVMMemcpy(c->to, CL_TRUE, c->dst + off, buf.get(), n, 0, nullptr, nullptr);
    if (err != CL_SUCCESS)
      return peer_copy_failed(c->stream, "clEnqueueSVMMemcpy (host to destination)", err);
  }
}

}  // namespace

accel_status_t op_memcpy_peer_async(void* dst, int32_t dst_device, const void* src,
                                    int32_t src_device, size_t bytes,
                                    accel_plugin_stream_t stream) {
  return guarded("memcpy_peer_async", [&]() -> accel_status_t {
    Stream* s = stream_of(stream);
    Device *ddev, *sdev;
    if (accel_status_t st = device_at(dst_device, ddev); st != ACCEL_SUCCESS) return st;
    if (accel_status_t st = device_at(src_device, sdev); st != ACCEL_SUCCESS) return st;
    if (s->dev != ddev && s->dev != sdev)
      return fail(ACCEL_ERROR_DEVICE_MISMATCH,
                  "memcpy_peer_async: the stream is on OpenCL %s, neither the source %s nor the "
                  "destination %s",
                  s->dev->label().c_str(), sdev->label().c_str(), ddev->label().c_str());
    accel_status_t st = check_device_range(ddev, dst, bytes, "destination", "the copy names");
    if (st == ACCEL_SUCCESS) st = check_device_range(sdev, src, bytes, "source", "the copy names");
    if (st != ACCEL_SUCCESS) return st;
    if (bytes == 0) return ACCEL_SUCCESS;
    if (s->recording) {  // one device: a recorded copy; two: re-issued (a host step)
      if (ddev != sdev)
        return fail(ACCEL_ERROR_NOT_SUPPORTED, "graph recording: copies between devices are "
                                               "re-issued");
      return graph_record_copy(s->recording, dst, src, bytes);
    }
    if (ddev == sdev) {  // one device: an ordinary copy
      return stream_enqueue(s, Op::copy(dst, src, bytes));
    }
    auto c = std::make_unique<PeerCopy>();
    if (st = staging_queue(sdev, &c->from); st != ACCEL_SUCCESS) return st;
    if (st = staging_queue(ddev, &c->to); st != ACCEL_SUCCESS) return st;
    c->stream = s;
    c->dst = static_cast<char*>(dst);
    c->src = static_cast<const char*>(src);
    c->bytes = bytes;
    st = stream_step(s, peer_copy_step, discard_peer_copy, c.get());
    if (st == ACCEL_SUCCESS) c.release();  // the step owns it now
    return st;
  });
}

}  // namespace accel::opencl
