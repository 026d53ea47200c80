// What the fake driver's translation units share: fake_cuda.cpp owns the
// model (contexts, streams, memory, handles) and lends these few services to
// fake_modules.cpp (modules, functions, launches). Hidden: nothing here is
// part of the fake libcuda.so.1's interface.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#define FAKE_CUDA_HIDDEN __attribute__((visibility("hidden")))

namespace fake_cuda {

// CUDA_SUCCESS with *ctx the calling thread's current context; otherwise
// what every context-bound Driver API call answers first
// (CUDA_ERROR_NOT_INITIALIZED before cuInit or in a poisoned fork() child,
// CUDA_ERROR_INVALID_CONTEXT without a current context).
FAKE_CUDA_HIDDEN CUresult current_context(CUcontext* ctx);

// The visible device ordinal of a context.
FAKE_CUDA_HIDDEN int context_device(CUcontext ctx);

// The stream an enqueueing call names (NULL and CU_STREAM_LEGACY: the
// current context's legacy stream), which must belong to the current
// context: CUDA_ERROR_INVALID_HANDLE (not live), CUDA_ERROR_INVALID_CONTEXT
// (another context's). *queue is opaque, for enqueue().
FAKE_CUDA_HIDDEN CUresult stream_for_launch(CUstream stream, void** queue);

// Runs `work` on the stream's worker, in order with everything else queued
// on it (copies, host functions, event records).
FAKE_CUDA_HIDDEN void enqueue(void* queue, std::function<void()> work);

// What every call that queues work does with it: records it when the stream
// captures (fake_graphs.cpp), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED when its
// capture was invalidated, else enqueue().
FAKE_CUDA_HIDDEN CUresult submit(void* queue, std::function<void()> work);

// Whether a kernel running in `ctx` may touch [p, p+bytes): device memory
// of the context's device, of a device the context enabled peer access to,
// or page-locked host memory (mapped into the device's address space under
// unified addressing, which the modelled device has).
FAKE_CUDA_HIDDEN bool kernel_can_access(CUcontext ctx, uintptr_t p, size_t bytes);

// FAKE_CUDA_DRIVER_VERSION (default: the CUDA_VERSION of the cuda.h the
// fake was built with).
FAKE_CUDA_HIDDEN int driver_version();

// The model's registry of live handles (streams, events, modules,
// functions): whether `h` was registered and not yet retired.
FAKE_CUDA_HIDDEN void track(const void* h);
FAKE_CUDA_HIDDEN bool untrack(const void* h);  // false: was not live
FAKE_CUDA_HIDDEN bool tracked(const void* h);

// fake_modules.cpp's counters for the fake_cuda_count() hook: "modules"
// (loaded, not unloaded), "kernel_launches" (launches cuLaunchKernel
// accepted), "dynamic_shared_opt_ins" (cuFuncSetAttribute calls raising
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); -1 for another name.
FAKE_CUDA_HIDDEN long long module_counter(const std::string& name);

// fake_graphs.cpp: stream capture (see there). `queue` as stream_for_launch
// gives it.
enum class Captured { no, recorded, invalidated };
// Records `work` as the next node of the stream's capture, if it captures.
FAKE_CUDA_HIDDEN Captured capture_work(void* queue, const std::function<void()>& work);
FAKE_CUDA_HIDDEN bool capturing(void* queue);
// True (and the capture invalidated) when the stream captures: a
// synchronize or query of it is refused.
FAKE_CUDA_HIDDEN bool capture_refuses_sync(void* queue);
// True (and those captures invalidated) when a stream of `ctx` captures.
FAKE_CUDA_HIDDEN bool capture_refuses_context_sync(CUcontext ctx);
// True (and the prohibiting captures invalidated) when the calling thread's
// capture mode refuses a potentially unsafe call now.
FAKE_CUDA_HIDDEN bool capture_refuses_unsafe_call();
// A destroyed stream's capture ends, discarded.
FAKE_CUDA_HIDDEN void capture_stream_destroyed(void* queue);
// "graphs", "graph_execs" (live: an exec's nodes count until its last
// queued launch ran), "graph_launches" (accepted), "captures" (active);
// -1 for another name.
FAKE_CUDA_HIDDEN long long graph_counter(const std::string& name);
// A graph entry point's base name (FAKE_CUDA_GRAPHS=0 hides them).
FAKE_CUDA_HIDDEN bool is_graph_entry(const char* symbol);

}  // namespace fake_cuda
