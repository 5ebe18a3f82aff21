// glibc's GNU extensions that Swift's Glibc module does not import (it is built without
// _GNU_SOURCE): malloc_trim, pthread_setname_np, SCHED_IDLE. Part of libc: nothing to
// install or link.
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

// Linux's value; <sched.h> shows the name only under _GNU_SOURCE.
#ifndef SCHED_IDLE
#define SCHED_IDLE 5
#endif

// Declared here because <pthread.h> shows it only under _GNU_SOURCE, and the Glibc module
// that owns that header is already built without it. The same prototype as glibc's.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread in the kernel (top -H, perf, /proc/PID/task/*/comm), 15 bytes
/// at most. Foundation's Thread.name, set from the new thread, left 4-5 of 300 threads with
/// the process's name here; this named all 300.
static inline int tapwire_name_current_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

/// Puts the calling thread in SCHED_IDLE (0, or the errno): it then runs only on CPU time no
/// other thread wants. Linux keeps the policy per thread (pid 0 is the caller). An unprivileged
/// thread cannot leave SCHED_IDLE again, so only a thread made for idle work calls this.
static inline int tapwire_make_current_thread_idle_priority(void) {
    struct sched_param param = {0};
    return sched_setscheduler(0, SCHED_IDLE, &param) == 0 ? 0 : errno;
}

/// Whether the calling thread runs in SCHED_IDLE (tests).
static inline int tapwire_current_thread_is_idle_priority(void) {
    return sched_getscheduler(0) == SCHED_IDLE;
}

/// The calling thread's kernel id (what `setpriority(PRIO_PROCESS, tid, …)` names).
static inline int tapwire_current_thread_id(void) {
    return (int)syscall(SYS_gettid);
}

/// Raises thread `tid`'s nice value by `steps` (capped at 19): 0, or the errno. Linux keeps
/// nice per thread, and any thread of the process may raise another's without privilege
/// (lowering it again would need CAP_SYS_NICE).
static inline int tapwire_raise_thread_nice(int tid, int steps) {
    errno = 0;
    int current = getpriority(PRIO_PROCESS, (id_t)tid);
    if (current == -1 && errno != 0) return errno;
    int target = current + steps > 19 ? 19 : current + steps;
    return setpriority(PRIO_PROCESS, (id_t)tid, target) == 0 ? 0 : errno;
}
