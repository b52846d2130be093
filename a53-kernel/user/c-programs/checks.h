/*
 * The checks of the C test programs in this directory (a header, not a program): each check
 * is counted, and a failed one prints a FAIL line naming the check, its condition and its line;
 * each program ends with a verdict line, "NAME: N of M checks failed", and exit status N.
 */
#ifndef UNIMEM_C_PROGRAMS_CHECKS_H
#define UNIMEM_C_PROGRAMS_CHECKS_H

#include <stdint.h>
#include <stdio.h>
#include <unimem_error.h>

static int checks, failed;

#define CHECK(what, cond)                                                                      \
    do {                                                                                       \
        checks++;                                                                              \
        if (!(cond)) {                                                                         \
            printf("FAIL %s: %s (line %d)\n", what, #cond, __LINE__);                          \
            failed++;                                                                          \
        }                                                                                      \
    } while (0)

/* A call that must fail (`cond` says how it reported it) with this status in
 * unimem_last_error(). */
#define CHECK_ERROR(what, cond, status)                                                        \
    do {                                                                                       \
        int held_ = (cond);                                                                    \
        uint64_t last_ = unimem_last_error();                                                  \
        checks++;                                                                              \
        if (!held_ || last_ != (uint64_t)(status)) {                                           \
            printf("FAIL %s: %s, last error %#llx, not %#llx (line %d)\n", what, #cond,        \
                   (unsigned long long)last_, (unsigned long long)(status), __LINE__);         \
            failed++;                                                                          \
        }                                                                                      \
    } while (0)

/* A call that returns a status; with `repeated`, unimem_last_error() must say the same. */
#define CHECK_RETURNS(what, call, status, repeated)                                            \
    do {                                                                                       \
        uint64_t got_ = (call);                                                                \
        checks++;                                                                              \
        if (got_ != (uint64_t)(status) || ((repeated) && unimem_last_error() != got_)) {       \
            printf("FAIL %s: %s returned %#llx, not %#llx (line %d)\n", what, #call,           \
                   (unsigned long long)got_, (unsigned long long)(status), __LINE__);          \
            failed++;                                                                          \
        }                                                                                      \
    } while (0)

/* Prints the verdict line, "NAME: N of M checks failed"; returns N as an exit status (at most
 * 255). */
static inline int verdict(const char *name)
{
    printf("%s: %d of %d checks failed\n", name, failed, checks);
    return failed > 255 ? 255 : failed;
}

#endif
