/*
 * A C program that checks its C library on this system and says what it found: formatted
 * output, the heap, sorting, options, the clock and sleeps. Exits 0 when every check held,
 * else the number of checks that failed.
 *
 *   cargo xtask run libc-check -- -n 3 -v word
 */
#include <assert.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int failed;

#define CHECK(what, cond)                                                                      \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL %s: %s (line %d)\n", what, #cond, __LINE__);                          \
            failed++;                                                                          \
        }                                                                                      \
    } while (0)

static void formatted_output(void)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%d %u %ld %llx %s %c", -42, 42u, -1234567890L, 0xdeadbeefcafeULL, "str", 'z');
    CHECK("snprintf integers and strings", strcmp(buf, "-42 42 -1234567890 deadbeefcafe str z") == 0);
    snprintf(buf, sizeof buf, "%.3f %g %e", 3.14159, 0.5, 12345.0);
    CHECK("snprintf doubles", strcmp(buf, "3.142 0.5 1.234500e+04") == 0);
    volatile size_t room = 4; /* a size the compiler does not see, so it does not warn */
    CHECK("snprintf truncates", snprintf(buf, room, "%s", "abcdef") == 6 && strcmp(buf, "abc") == 0);
    double parsed = strtod("2.5e3", NULL);
    CHECK("strtod", parsed == 2500.0);
    /* C11 7.21.5.2: NULL flushes every output stream (picolibc's fflush faults on it; the
     * runtime's wrapper takes it). */
    printf("a line without its end, flushed by fflush(NULL)... ");
    CHECK("fflush(NULL)", fflush(NULL) == 0);
    CHECK("fflush(stdout)", fflush(stdout) == 0);
}

/* 64 MiB in total through malloc and free, in pieces that must not overlap. */
static void heap(void)
{
    enum { PIECES = 64, PIECE = 1 << 20 };
    static unsigned char *pieces[PIECES];
    for (int i = 0; i < PIECES; i++) {
        pieces[i] = malloc(PIECE);
        CHECK("malloc 1 MiB", pieces[i] != NULL);
        if (pieces[i] == NULL)
            return;
        memset(pieces[i], i, PIECE);
    }
    for (int i = 0; i < PIECES; i++)
        CHECK("heap pieces keep their bytes", pieces[i][0] == i && pieces[i][PIECE - 1] == i);
    for (int i = 0; i < PIECES; i++)
        free(pieces[i]);
    void *again = malloc(16 << 20);
    CHECK("malloc after free", again != NULL);
    free(again);
    CHECK("calloc zeroes", ((int *)calloc(4, sizeof(int)))[3] == 0);
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void sorting(void)
{
    int values[] = { 5, -3, 9, 0, 7, 7, -8, 2 };
    qsort(values, sizeof values / sizeof values[0], sizeof values[0], by_value);
    int sorted[] = { -8, -3, 0, 2, 5, 7, 7, 9 };
    CHECK("qsort", memcmp(values, sorted, sizeof values) == 0);
}

/* Expects `-n 3 -v word` (what the README's and the test's command pass). */
static void options(int argc, char **argv)
{
    int n = 0, verbose = 0, opt;
    while ((opt = getopt(argc, argv, "n:v")) != -1) {
        switch (opt) {
        case 'n':
            n = atoi(optarg);
            break;
        case 'v':
            verbose = 1;
            break;
        default:
            break;
        }
    }
    CHECK("getopt -n", n == 3);
    CHECK("getopt -v", verbose == 1);
    CHECK("getopt operands", optind == argc - 1 && strcmp(argv[optind], "word") == 0);
}

static uint64_t now_us(void)
{
    struct timespec t;
    CHECK("clock_gettime", clock_gettime(CLOCK_MONOTONIC, &t) == 0);
    return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static void clock_and_sleeps(void)
{
    uint64_t start = now_us();
    CHECK("the clock moves forward", now_us() >= start);
    sleep(1);
    uint64_t slept = now_us() - start;
    printf("sleep(1) took %llu us of the node's clock\n", (unsigned long long)slept);
    CHECK("sleep(1) lasts about a second", slept >= 1000000 && slept < 3000000);
    start = now_us();
    usleep(100);
    CHECK("usleep(100) lasts at least 100 us", now_us() - start >= 100);
    start = now_us();
    struct timespec half_ms = { .tv_sec = 0, .tv_nsec = 500000 }, left = { 1, 1 };
    CHECK("nanosleep", nanosleep(&half_ms, &left) == 0 && left.tv_sec == 0 && left.tv_nsec == 0);
    CHECK("nanosleep lasts what it was asked", now_us() - start >= 500);
    struct timespec bad = { .tv_sec = 0, .tv_nsec = 1000000000 };
    CHECK("nanosleep refuses a bad request", nanosleep(&bad, NULL) == -1 && errno == EINVAL);
    struct timeval tv;
    uint64_t before = now_us();
    CHECK("gettimeofday", gettimeofday(&tv, NULL) == 0);
    uint64_t tv_us = (uint64_t)tv.tv_sec * 1000000 + (uint64_t)tv.tv_usec;
    CHECK("gettimeofday is the clock", tv_us >= before && tv_us <= now_us());
    CHECK("time() is the clock in seconds", time(NULL) >= 1);
}

static void environment(void)
{
    CHECK("getenv finds no variable (there is no environment)", getenv("HOME") == NULL);
}

int main(int argc, char **argv)
{
    formatted_output();
    heap();
    sorting();
    options(argc, argv);
    clock_and_sleeps();
    environment();
    assert(failed >= 0);
    printf("libc-check: %d checks failed\n", failed);
    return failed;
}
