// glibc's GNU extensions that Swift's Glibc module does not import (it is built without
// _GNU_SOURCE): malloc_trim, pthread_setname_np. Part of libc: nothing to install or link.
#include <malloc.h>
#include <pthread.h>

// Declared here because <pthread.h> shows it only under _GNU_SOURCE, and the Glibc module
// that owns that header is already built without it. The same prototype as glibc's.
extern int pthread_setname_np(pthread_t thread, const char *name);

/// Names the calling thread in the kernel (top -H, perf, /proc/PID/task/*/comm), 15 bytes
/// at most. Foundation's Thread.name, set from the new thread, left 4-5 of 300 threads with
/// the process's name here; this named all 300.
static inline int tapwire_name_current_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}
