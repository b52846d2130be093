/*
 * c-shared-counter: the example of the README's "Write your program in C", the C twin of the
 * Rust `shared-counter`. Every node allocates a page on the next node, adds 1 to a counter in
 * it 100 times with remote fetch-and-add, checks the total and frees the page.
 *
 *   cargo xtask run a53-kernel/user/c-programs/c-shared-counter.c --nodes 4
 */
#include <stdint.h>
#include <stdio.h>
#include <unimem.h>

int main(void)
{
    uint64_t me = getBoardPid(), nodes = getNumberBoards();
    uint64_t next = (me + 1) % nodes;
    int64_t *counter = allocSharedPage(1, next); /* a page on the next node */
    if (counter == NULL) {
        printf("node %llu: no shared page on node %llu\n", (unsigned long long)me, (unsigned long long)next);
        return 1;
    }
    for (int i = 0; i < 100; i++)
        FAD64(counter, 1); /* served atomically by that node's service */
    uint64_t total = READ64((uint64_t *)counter);
    printf("node %llu: counted to %llu on node %llu\n", (unsigned long long)me, (unsigned long long)total,
           (unsigned long long)next);
    freeSharedPage(counter);
    return total == 100 ? 0 : 1;
}
