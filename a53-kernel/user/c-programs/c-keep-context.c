/*
 * c-keep-context: checks that what a C program keeps beyond its general registers stays its
 * own while other processes take turns on its core: its thread-local storage (TPIDR_EL0 points
 * at a block of its own, at an address that differs between copies), the floating-point
 * rounding mode (FPCR) and floating-point values held in registers across calls. Several
 * copies run at once (the kernel test `process::` runs four on the two process cores), each
 * with the thread argument START << 8 | INDEX: all of them begin their rounds at the node's
 * time START (microseconds since boot), whenever each was spawned, and go on for at least
 * RUN_US; each yields at every step, so the copies take turns.
 *
 * Exit status: 0 when every round found its own; else the bits of what was lost in some round:
 * 1 the TLS pointer or a thread-local value, 2 the rounding mode, 4 a floating-point result.
 */
#include <fenv.h>
#include <picotls.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unimem.h>
#include <unimem_sys.h>

#define ROUNDS 100
#define STEPS 20
#define COPIES_MAX 8
/* Microseconds each copy runs its rounds at least (they take about 15 ms): long enough for the
 * copies to overlap even if one began late. */
#define RUN_US 200000

/* Each copy's TLS block: a different address in each copy, so a TPIDR_EL0 left behind by
 * another copy points at the wrong one. */
static _Alignas(64) char blocks[COPIES_MAX][512];
static __thread uint64_t mark;

static uint64_t tpidr(void)
{
    uint64_t value;
    __asm__ volatile("mrs %0, tpidr_el0" : "=r"(value));
    return value;
}

/* STEPS multiply-adds whose every rounding shows in the result; with `yield`, the process
 * gives its core away at every step, holding the value in a register the call preserves. */
static double walk(double x, int yield)
{
    for (int i = 0; i < STEPS; i++) {
        x = x * 1.000000119 + 0.3;
        if (yield)
            unimem_sys_yield();
    }
    return x;
}

int main(void)
{
    uint64_t argument = readThreadArgument(), index = (argument & 0xff) % COPIES_MAX, start = argument >> 8;
    if (_tls_size() > sizeof blocks[0]) {
        printf("c-keep-context: TLS of %zu bytes does not fit\n", _tls_size());
        return 0x10;
    }
    _init_tls(blocks[index]);
    _set_tls(blocks[index]);
    uint64_t tp = tpidr();
    int mode = index % 2 ? FE_UPWARD : FE_DOWNWARD;
    fesetround(mode);
    for (uint64_t now = unimem_sys_time_us(); now < start; now = unimem_sys_time_us())
        unimem_sys_sleep_us(start - now);
    int lost = 0;
    for (int round = 1; round <= ROUNDS || unimem_sys_time_us() < start + RUN_US; round++) {
        mark = 0xc0de0000 + index * 1000 + round;
        double start = (double)index + round / 7.0;
        double shared = walk(start, 1);
        double alone = walk(start, 0);
        if (tpidr() != tp || mark != 0xc0de0000 + index * 1000 + round)
            lost |= 1;
        if (fegetround() != mode)
            lost |= 2;
        if (memcmp(&shared, &alone, sizeof shared) != 0)
            lost |= 4;
    }
    printf("c-keep-context %llu: %s (%#x)\n", (unsigned long long)index, lost ? "lost some" : "kept all", lost);
    return lost;
}
