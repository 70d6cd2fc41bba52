// Linked only in a ThreadSanitizer build, into every process that calls
// gRPC: reprise-server, and through the SDK the CLI, workers and tests
// (tsan_absl_sync_dep in the top meson.build). Nowhere else.
//
// gRPC hands its objects from one of its threads to another under
// absl::Mutex (gpr_mu and grpc_core::Mutex are absl::Mutex), and Debian's
// Abseil and gRPC are not built with TSan, so TSan saw none of those
// hand-overs. In the server, whose handlers are callback reactors (libgrpc++
// builds each call's objects on one thread and runs the handler, Finish's
// completion and OnDone on others), one run of the server tests reported
// some 1,100 races: gRPC's header code, compiled into the server and so
// instrumented, on two threads; our reactors' construction against their
// OnDone. Suppressing them took a rule that dropped every report with a
// libgrpc++ frame in any stack, which also hid every race of ours on a gRPC
// thread; clients needed the same for libgrpc (channels, subchannels, TLS).
//
// Instead, the process defines the absl::Mutex and absl::CondVar functions
// gRPC calls. The executable's definitions come first in the dynamic
// linker's lookup, so gRPC's calls land here; each tells TSan what the real
// function does to the happens-before order (a lock acquires the mutex, an
// unlock releases it, a condition wait releases and reacquires it) and calls
// the real one in libabsl_synchronization (dlsym RTLD_NEXT). The names are
// the Itanium-mangled names of Debian 12's Abseil (inline namespace
// debian3): with another Abseil nothing calls these, and the reports come
// back, pointing here.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

// absl::Duration and absl::Time as the ABI passes them: {int64, uint32}.
struct AbslDurationRep {
  int64_t hi;
  uint32_t lo;
};

template <typename Fn>
Fn real_absl_function(const char* mangled) {
  void* fn = dlsym(RTLD_NEXT, mangled);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s is not in the loaded Abseil\n", mangled);
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace

#define REPRISE_ABSL_MUTEX_LOCK "_ZN4absl7debian35Mutex4LockEv"
#define REPRISE_ABSL_MUTEX_UNLOCK "_ZN4absl7debian35Mutex6UnlockEv"
#define REPRISE_ABSL_MUTEX_TRY_LOCK "_ZN4absl7debian35Mutex7TryLockEv"
#define REPRISE_ABSL_CONDVAR_WAIT "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE"
#define REPRISE_ABSL_CONDVAR_WAIT_TIMEOUT "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"
#define REPRISE_ABSL_CONDVAR_WAIT_DEADLINE "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"

extern "C" {

__attribute__((visibility("default"))) void reprise_absl_mutex_lock(void* mu) __asm__(REPRISE_ABSL_MUTEX_LOCK);
__attribute__((visibility("default"))) void reprise_absl_mutex_unlock(void* mu) __asm__(REPRISE_ABSL_MUTEX_UNLOCK);
__attribute__((visibility("default"))) bool reprise_absl_mutex_try_lock(void* mu) __asm__(REPRISE_ABSL_MUTEX_TRY_LOCK);
__attribute__((visibility("default"))) void reprise_absl_condvar_wait(void* cv,
                                                                      void* mu) __asm__(REPRISE_ABSL_CONDVAR_WAIT);
__attribute__((visibility("default"))) bool reprise_absl_condvar_wait_timeout(
    void* cv, void* mu, AbslDurationRep d) __asm__(REPRISE_ABSL_CONDVAR_WAIT_TIMEOUT);
__attribute__((visibility("default"))) bool reprise_absl_condvar_wait_deadline(
    void* cv, void* mu, AbslDurationRep t) __asm__(REPRISE_ABSL_CONDVAR_WAIT_DEADLINE);

void reprise_absl_mutex_lock(void* mu) {
  static const auto real = real_absl_function<void (*)(void*)>(REPRISE_ABSL_MUTEX_LOCK);
  real(mu);
  __tsan_acquire(mu);
}

void reprise_absl_mutex_unlock(void* mu) {
  static const auto real = real_absl_function<void (*)(void*)>(REPRISE_ABSL_MUTEX_UNLOCK);
  __tsan_release(mu);
  real(mu);
}

bool reprise_absl_mutex_try_lock(void* mu) {
  static const auto real = real_absl_function<bool (*)(void*)>(REPRISE_ABSL_MUTEX_TRY_LOCK);
  const bool locked = real(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}

void reprise_absl_condvar_wait(void* cv, void* mu) {
  static const auto real = real_absl_function<void (*)(void*, void*)>(REPRISE_ABSL_CONDVAR_WAIT);
  __tsan_release(mu);
  real(cv, mu);
  __tsan_acquire(mu);
}

bool reprise_absl_condvar_wait_timeout(void* cv, void* mu, AbslDurationRep d) {
  static const auto real =
      real_absl_function<bool (*)(void*, void*, AbslDurationRep)>(REPRISE_ABSL_CONDVAR_WAIT_TIMEOUT);
  __tsan_release(mu);
  const bool timed_out = real(cv, mu, d);
  __tsan_acquire(mu);
  return timed_out;
}

bool reprise_absl_condvar_wait_deadline(void* cv, void* mu, AbslDurationRep t) {
  static const auto real =
      real_absl_function<bool (*)(void*, void*, AbslDurationRep)>(REPRISE_ABSL_CONDVAR_WAIT_DEADLINE);
  __tsan_release(mu);
  const bool timed_out = real(cv, mu, t);
  __tsan_acquire(mu);
  return timed_out;
}

}  // extern "C"
