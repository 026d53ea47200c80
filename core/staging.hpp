// Copies between device memory and pageable host memory (memory in no accel
// pinned or registered allocation), made safe as CUDA's "API
// synchronization behavior" describes: accel_memcpy_async returns only once
// a pageable source has been read, and only once a copy into pageable memory
// has completed, so the caller may reuse or free its host buffer at once.
//
// Small host-to-device copies are staged: the bytes are copied into a block
// of the stream's staging ring (pinned blocks from the backend's host cache,
// kept warm and reused once a marker recorded after their last copy has
// completed) and the device copy is queued from there, fully asynchronous.
// The ring waits for its oldest block only when every block is still in use,
// and never with a lock held (docs/architecture.md, "Locks and waits").
// Larger copies, copies into pageable memory, and backends without host
// memory or events are queued from the caller's memory and then waited for
// (the stream is synchronized).
#pragma once

#include <cstddef>

#include "accel/accel.h"

struct accel_stream_s;

namespace accel::core {

// The largest host-to-device copy the ring stages (also its block size).
inline constexpr size_t kStagingBlockBytes = size_t{1} << 20;
// Blocks a ring holds before a copy waits for its oldest one (a copy from a
// host function on the stream itself never waits: the ring grows instead).
inline constexpr size_t kStagingRingBlocks = 4;

// accel_memcpy_async's copy between device memory and pageable host memory
// on `stream` (live, of a backend with device memory; pointers checked).
// `fn` names the entry point in messages.
accel_status_t pageable_copy(const char* fn, void* dst, const void* src, size_t bytes,
                             accel_memcpy_kind_t kind, accel_stream_s* stream);

// accel_stream_destroy, before the plugin's stream_destroy, in two steps
// around retire_stream_host_memory (which records the host cache's markers
// on the stream while it still exists): retire names the stream as a user
// of each block of the ring and takes the blocks out of it; release frees
// them into the host cache, which reuses them once the stream's queued
// copies from them have run.
void retire_stream_staging(accel_stream_s* stream);
void release_stream_staging(accel_stream_s* stream);

}  // namespace accel::core
