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

}  // namespace fake_cuda
