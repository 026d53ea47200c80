// Pinned host memory in the core: one alloc::HostCache per backend with the
// host-memory group, over its plugin (host_memory_ops.cpp), behind
// accel_host_malloc / accel_host_free unless ACCEL_ALLOC_CONF says
// backend:native; and the hooks other entry points call so that a freed
// block is not reused while a copy queued from it may still run.
#pragma once

#include "alloc/host_cache.hpp"
#include "alloc/stats.hpp"
#include "backend.hpp"
#include "memory_table.hpp"

struct accel_stream_s;

namespace accel::core {

// The cache of `b` (ready, with the host-memory group), created on first
// use and never destroyed.
alloc::HostCache& host_cache(Backend& b);

// accel_memcpy_async, once the copy is queued: `host` is the memory-table
// entry of the copy's host-side pointer (any type). When it is a cached
// pinned block, `stream` is added to the streams a free of it waits for.
// One relaxed load when no cached block was ever handed out, and a type
// test when the memory is not pinned.
void note_host_use(const Allocation& host, accel_stream_s* stream);
// The same, looking the pointer up in the memory table itself.
void note_host_use(const void* host_ptr, accel_stream_s* stream);

// accel_stream_destroy, before the plugin's stream_destroy (the handle may
// already be marked dead): the pinned blocks `s` used get their markers on
// it now.
void retire_stream_host_memory(accel_stream_s* s);

// Each backend's cache statistics added up (backend:native: the same
// statistics over the direct calls, a "segment" per allocation).
alloc::HostStats host_cache_stats();

// accel_empty_host_cache: every cache's empty_cache(); the first failure.
accel_status_t empty_host_caches();

// backend:native accounting of accel_host_malloc / accel_host_free.
void native_host_account_alloc(size_t bytes);
void native_host_account_free(size_t bytes);

// fork(): prepare takes the registry lock and every cache's lock, before the
// allocation table's; parent and child release them.
void lock_host_caches_for_fork();
void unlock_host_caches_after_fork();

}  // namespace accel::core
