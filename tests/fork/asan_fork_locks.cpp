// Under AddressSanitizer, make the sanitizer's own allocator survive fork()
// as glibc's malloc does, so that the fork tests test accel's locks and not
// the tool's.
//
// Why: clang 14's ASan runtime (Debian 12's) takes no lock of its own
// around fork(). A hammering thread that holds one of its allocator's size
// class mutexes at fork() leaves it held in the child, whose next malloc
// then waits forever. CI's ASan run of [fork-locks] (debug log on) once
// had a child hang until its alarm; here 1 run in 12 did, and gdb on the
// hung child showed it in
// SizeClassAllocator64::GetFromAllocator under operator new, called from
// accel's error message formatting, with no accel lock held. LLVM 18's
// runtime installs these same handlers itself (llvm-project pull request
// 75290, "[asan] Install pthread_atfork"); with it this file does nothing
// that the runtime has not done already.
//
// The handlers must run last before the fork and first after it: after
// libaccelcore's prepare handler has taken accel's locks (a thread holding
// one of those may be allocating, and would wait on the allocator we hold)
// and before its child handler, which allocates. pthread_atfork runs
// prepare handlers in the reverse order of registration and the others in
// registration order, so these are registered before libaccelcore's, from
// the executable's .preinit_array, which runs before any shared library's
// constructors. The runtime's entry points are weak references: a runtime
// without them (GCC's libasan.so exports none) leaves the tests as they are.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ACCEL_TEST_ASAN 1
#endif
#endif

#ifdef ACCEL_TEST_ASAN
#include <pthread.h>

namespace __lsan {
void LockThreadRegistry() __attribute__((weak));
void UnlockThreadRegistry() __attribute__((weak));
void LockAllocator() __attribute__((weak));
void UnlockAllocator() __attribute__((weak));
}  // namespace __lsan
namespace __sanitizer {
void StackDepotLockAll() __attribute__((weak));
void StackDepotUnlockAll() __attribute__((weak));
}  // namespace __sanitizer

namespace {

bool have_runtime_locks() {
  return __lsan::LockThreadRegistry != nullptr && __lsan::UnlockThreadRegistry != nullptr &&
         __lsan::LockAllocator != nullptr && __lsan::UnlockAllocator != nullptr &&
         __sanitizer::StackDepotLockAll != nullptr && __sanitizer::StackDepotUnlockAll != nullptr;
}

void lock_runtime() {
  __lsan::LockThreadRegistry();
  __lsan::LockAllocator();
  __sanitizer::StackDepotLockAll();
}

void unlock_runtime() {
  __sanitizer::StackDepotUnlockAll();
  __lsan::UnlockAllocator();
  __lsan::UnlockThreadRegistry();
}

void register_handlers(int, char**, char**) {
  if (have_runtime_locks()) pthread_atfork(lock_runtime, unlock_runtime, unlock_runtime);
}

__attribute__((section(".preinit_array"), used)) void (*const g_register)(int, char**,
                                                                          char**) = register_handlers;

}  // namespace
#endif
