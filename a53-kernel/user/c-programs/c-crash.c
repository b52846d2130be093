/*
 * c-crash: a C program that ends badly, as its one argument says, so that tests can see how
 * the system takes it: `null` dereferences NULL, `stack` runs off the end of its stack,
 * `abort` calls abort(), `assert` fails an assert(), `exit` returns 7 from main.
 *
 *   cargo xtask run c-crash -- assert
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Recursion the compiler cannot turn into a loop: each frame keeps a page of its own. */
#pragma GCC diagnostic ignored "-Winfinite-recursion"
static int deeper(volatile char *above, int depth)
{
    volatile char page[4096];
    page[0] = (char)depth;
    page[4095] = above[0];
    return deeper(page, depth + 1) + page[0];
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    printf("c-crash: %s\n", how);
    if (strcmp(how, "null") == 0) {
        volatile int *nothing = NULL;
        return *nothing;
    }
    if (strcmp(how, "stack") == 0) {
        char top = 0;
        return deeper(&top, 0);
    }
    if (strcmp(how, "abort") == 0)
        abort();
    if (strcmp(how, "assert") == 0)
        assert(argc == 1 && "c-crash was asked to fail this assert");
    if (strcmp(how, "exit") == 0)
        return 7;
    printf("c-crash: say null, stack, abort, assert or exit\n");
    return 2;
}
