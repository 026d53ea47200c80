// What the fake runtime's files share (never exported: the fake is built
// with hidden visibility and exports.map names only the HIP entry points and
// fake_hip_* hooks). fake_hip.cpp owns devices, streams and memory;
// fake_hip_modules.cpp the module API over them; fake_hip_code_object.cpp
// reads code objects; fake_hip_kernels.cpp runs the known kernels on the host.
#pragma once

#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace fake_hip {

// Initialises the fake on first use; hipErrorNoDevice when it has no device.
hipError_t initialise();
// The calling thread's current device (hipSetDevice).
int current_device();
// The stream a handle names (NULL and hipStreamPerThread: the current
// device's null stream), or nullptr when it is no live stream.
ihipStream_t* stream_of(hipStream_t handle);
// The device a resolved stream belongs to.
int device_of(const ihipStream_t* stream);
// Queues `work` on the stream, in order with its other work and with HIP's
// implicit synchronisation of the null stream and blocking streams.
void enqueue(ihipStream_t* stream, std::function<void()> work);
// Whether [p, p + bytes) lies inside one live hipMalloc allocation or one
// hipHostMalloc allocation (memory a kernel can reach). Thread-safe.
bool kernel_accessible(const void* p, size_t bytes);

}  // namespace fake_hip
