/*
 * What the runtime's C files share (not for programs): how a result of the C library's
 * calls, a value or -errno, becomes POSIX's, a value or -1 with errno set. errno is picolibc's
 * (thread-local), so it is set here, in C.
 */
#ifndef UNIMEM_CRT_POSIX_H
#define UNIMEM_CRT_POSIX_H

#include <errno.h>
#include <stdint.h>

/* r, or -1 with errno = -r when r is negative. */
static inline int64_t posix_result(int64_t r)
{
    if (r < 0) {
        errno = (int)-r;
        return -1;
    }
    return r;
}

#endif /* UNIMEM_CRT_POSIX_H */
