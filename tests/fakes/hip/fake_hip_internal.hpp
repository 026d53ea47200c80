// What the fake runtime's files share (never exported: the fake is built
// with hidden visibility and exports.map names only the HIP entry points and
// fake_hip_* hooks). fake_hip.cpp owns devices, streams and memory;
// fake_hip_modules.cpp the module API over them; fake_hip_code_object.cpp
// reads code objects; fake_hip_kernels.cpp runs the known kernels on the host;
// fake_hip_graphs.cpp models stream capture and graphs.
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
// implicit synchronisation of the null stream and blocking streams; while
// the stream captures, records it instead (capture_take's status).
hipError_t enqueue(ihipStream_t* stream, std::function<void()> work);
// Whether [p, p + bytes) lies inside one live hipMalloc allocation or one
// hipHostMalloc allocation (memory a kernel can reach). Thread-safe.
bool kernel_accessible(const void* p, size_t bytes);


// --- capture (fake_hip_graphs.cpp) ---------------------------------------------
// Never take the fake's state lock: callers may hold it.

// false: `stream` is not capturing (queue the work). true: it is, and `rc`
// says what became of the work: recorded (hipSuccess, `work` moved from),
// refused because the capture was invalidated earlier
// (hipErrorStreamCaptureInvalidated), or, for an event record (`is_record`),
// refused and the capture invalidated (hipErrorStreamCaptureUnsupported).
bool capture_take(const ihipStream_t* stream, std::function<void()>& work, bool is_record,
                  hipError_t& rc);
// hipErrorStreamCaptureUnsupported, invalidating the capture, when `stream`
// is capturing (a call a capture does not allow); hipSuccess otherwise.
hipError_t capture_refuse(const ihipStream_t* stream);
// hipStreamDestroy: the stream's capture, if any, ends (discarded).
void capture_forget(const ihipStream_t* stream);

}  // namespace fake_hip
