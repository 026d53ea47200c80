// Level Zero events handed out from per-device event pools and recycled once
// the device can no longer signal them.
#include "l0.hpp"

namespace accel_ze {

namespace {

constexpr uint32_t kPoolSize = 256;
constexpr size_t kRecycleScan = 64;  // retired slots looked at per acquire

}  // namespace

accel_status_t SlotPool::acquire(SlotRef* out) {
  std::unique_lock lock(mu_);
  for (size_t k = 0, n = retired_.size(); k < n && k < kRecycleScan; ++k) {
    Slot* s = retired_.front();
    retired_.pop_front();
    if (ze.zeEventQueryStatus(s->ev) == ZE_RESULT_SUCCESS &&
        ze.zeEventHostReset(s->ev) == ZE_RESULT_SUCCESS) {
      s->armed = false;
      free_.push_back(s);
    } else {
      retired_.push_back(s);
    }
  }
  Slot* s = nullptr;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
  } else {
    if (pools_.empty() || next_index_ == kPoolSize) {
      ze_event_pool_desc_t desc{};
      desc.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
      desc.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
      if (timing_) desc.flags |= ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
      desc.count = kPoolSize;
      // Visible to every device of the context (no device list), so a
      // stream of another device of this driver can wait on its events.
      ze_event_pool_handle_t pool = nullptr;
      ze_result_t r = ze.zeEventPoolCreate(dev_->driver->context, &desc, 0, nullptr, &pool);
      if (r != ZE_RESULT_SUCCESS)
        return ze_fail("zeEventPoolCreate", r, dev_->driver->handle, "%s, %u %s events",
                       dev_->label(), kPoolSize, timing_ ? "timestamp" : "host-visible");
      pools_.push_back(pool);
      next_index_ = 0;
    }
    ze_event_desc_t ed{};
    ed.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    ed.index = next_index_;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    ze_event_handle_t ev = nullptr;
    ze_result_t r = ze.zeEventCreate(pools_.back(), &ed, &ev);
    if (r != ZE_RESULT_SUCCESS)
      return ze_fail("zeEventCreate", r, dev_->driver->handle, "%s, pool index %u", dev_->label(),
                     next_index_);
    ++next_index_;
    s = new Slot();
    s->ev = ev;
    s->dev = dev_;
    s->timing = timing_;
  }
  lock.unlock();
  try {
    *out = SlotRef(s, [this](Slot* p) { release(p); });
  } catch (...) {
    release(s);
    throw;
  }
  return ACCEL_SUCCESS;
}

void SlotPool::release(Slot* s) {
  std::lock_guard lock(mu_);
  // A slot nobody signalled is still reset: reusable at once. One that was
  // appended (or handed to a host thread) waits until it has been signalled.
  if (s->armed) retired_.push_back(s);
  else free_.push_back(s);
}

accel_status_t wait_slot(const SlotRef& slot, const char* what) {
  ze_result_t r = ze.zeEventHostSynchronize(slot->ev, UINT64_MAX);
  if (r != ZE_RESULT_SUCCESS)
    return ze_fail("zeEventHostSynchronize", r, slot->dev->driver->handle, "%s on %s", what,
                   slot->dev->label());
  return ACCEL_SUCCESS;
}

accel_status_t query_slot(const SlotRef& slot, const char* what) {
  ze_result_t r = ze.zeEventQueryStatus(slot->ev);
  if (r == ZE_RESULT_SUCCESS) return ACCEL_SUCCESS;
  if (r == ZE_RESULT_NOT_READY) return ACCEL_ERROR_NOT_READY;
  return ze_fail("zeEventQueryStatus", r, slot->dev->driver->handle, "%s on %s", what,
                 slot->dev->label());
}

}  // namespace accel_ze
