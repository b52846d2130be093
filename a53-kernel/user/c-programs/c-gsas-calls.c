/*
 * c-gsas-calls: every call of unimem.h, and every primitive of unimem_sys.h, from C, each
 * result checked; on two nodes or more.
 *
 * Started without a thread argument (as `cargo xtask run` starts it), it checks the system
 * calls (its arguments among them: pass any), then on the next node reads and writes a page
 * with the seed's calls and another with their _e variants, reads both back whole with
 * READ4K, and has the refusals returned: unaligned addresses, a WRITE128 across a page's end,
 * NULL pointers, freed pages, a sharing mode, page count or node out of range, programs that
 * cannot be forked. Then it starts itself on the next node with remoteFork, its thread argument
 * a report page: that child, another domain, may read but not write a read-only page of this
 * process, may not touch a private one, writes its verdict into the report page and ends as
 * the seed says a call on an invalid address ends a program: READ64 of an unaligned address
 * logs "READ64(0x...): Local(Unaligned), exit status 0x182" and exits. Each failed check is
 * printed; the verdict line is "c-gsas-calls: N of M checks failed", and the process ends with
 * unimem_sys_exit(N) (0: all held).
 *
 *   cargo xtask run c-gsas-calls --nodes 2 --on 0 -- any words
 */
#include "checks.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unimem.h>
#include <unimem_mailbox.h>
#include <unimem_sys.h>

#define PAGE UNIMEM_PAGE_SIZE
#define LOCAL_BAD_ARGUMENT (UNIMEM_E_LOCAL + UNIMEM_GSAS_BAD_ARGUMENT)
/* What the owner writes into its read-only and private pages. */
#define READ_ONLY_VALUE 0x0123456789abcdefull
#define PRIVATE_VALUE 0x5ec2e7005ec2e700ull
/* The child's verdict in word 0 of the report page: this tag and its failed checks. */
#define CHILD_DONE 0xd0e0000000000000ull
/* The opcode the child holds while it lives: a send to it finds no receiver once it has ended. */
#define OP_ALIVE 15
#define CHILD_US 60000000ull

/* A GSAS address in the seed's pointer types: its bits, never dereferenced. */
#define AT(page, offset, type) ((type *)((char *)(page) + (offset)))

/* unimem_sys.h: the node, the console, the arguments, the clock, sleeps, yield, regions. */
static void system_calls(int argc, char **argv)
{
    CHECK("unimem_sys_node", unimem_sys_node() == getBoardPid());
    CHECK("unimem_sys_nodes", unimem_sys_nodes() == getNumberBoards() && unimem_sys_nodes() >= 2);
    static const char line[] = "c-gsas-calls: this line went out through unimem_sys_log";
    CHECK("unimem_sys_log", unimem_sys_log(line, sizeof line - 1) == (int64_t)(sizeof line - 1));

    int64_t length = 0;
    for (int i = 1; i < argc; i++)
        length += (int64_t)strlen(argv[i]) + 1;
    char args[UNIMEM_ARGS_MAX];
    CHECK("unimem_sys_args: the length alone", unimem_sys_args(NULL, 0) == length);
    CHECK("unimem_sys_args", unimem_sys_args(args, sizeof args) == length);
    size_t at = 0;
    for (int i = 1; i < argc; at += strlen(argv[i]) + 1, i++)
        CHECK("unimem_sys_args: an argument", strcmp(&args[at], argv[i]) == 0);

    uint64_t before = unimem_sys_time_us();
    CHECK("unimem_sys_sleep_us", unimem_sys_sleep_us(2000) == 0);
    uint64_t after = unimem_sys_time_us();
    CHECK("unimem_sys_time_us across a 2 ms sleep", after - before >= 2000 && after - before < 2000000);
    unimem_sys_yield();
    CHECK("unimem_sys_time_us after a yield", unimem_sys_time_us() >= after);

    int64_t region = unimem_sys_map(3 * 4096 + 1, UNIMEM_MAP_WRITABLE); /* four pages */
    CHECK("unimem_sys_map", region > 0 && region % 4096 == 0);
    if (region > 0) {
        volatile uint8_t *bytes = (volatile uint8_t *)(uintptr_t)region;
        CHECK("a new region is zeroed", bytes[0] == 0 && bytes[4 * 4096 - 1] == 0);
        bytes[4 * 4096 - 1] = 0x5a;
        CHECK("a region is writable", bytes[4 * 4096 - 1] == 0x5a);
    }
    CHECK("unimem_sys_map of 0 bytes", unimem_sys_map(0, UNIMEM_MAP_WRITABLE) == -UNIMEM_SYS_BAD_ARGUMENT);
    CHECK("unimem_sys_map with an unknown flag", unimem_sys_map(4096, 0x80) == -UNIMEM_SYS_BAD_ARGUMENT);
}

/* The words both pages get, and where: a char at 1, a uint32_t at 4, then uint64_t. */
#define W32 0xa1b2c3d4u
#define W64 0x1122334455667788ull
#define W128_LOW 0x0102030405060708ull
#define W128_HIGH 0x1112131415161718ull
#define CAS_NEW 0x0badc0ffee0ddf00ull

/* What READ4K must see in either page after the calls below. */
static void expected_page(uint8_t *page)
{
    memset(page, 0, PAGE);
    uint32_t w32 = W32;
    uint64_t w[5] = { CAS_NEW, W128_LOW, W128_HIGH, (uint64_t)-2, 78 };
    page[1] = 'x';
    memcpy(page + 4, &w32, 4);
    memcpy(page + 8, w, sizeof w);
}

/* The seed's calls on a page of node: each result checked, then the whole page. */
static void seed_calls(char *page)
{
    WRITE8(page + 1, 'x');
    CHECK("READ8", READ8(page + 1) == 'x');
    WRITE32(AT(page, 4, uint32_t), W32);
    CHECK("READ32", READ32(AT(page, 4, uint32_t)) == W32);
    WRITE64(AT(page, 8, uint64_t), W64);
    CHECK("READ64", READ64(AT(page, 8, uint64_t)) == W64);
    uint64_t pair[2] = { W128_LOW, W128_HIGH };
    WRITE128(AT(page, 16, uint64_t), pair);
    CHECK("WRITE128", READ64(AT(page, 16, uint64_t)) == W128_LOW && READ64(AT(page, 24, uint64_t)) == W128_HIGH);
    CHECK("CAS64 that swaps", CAS64(AT(page, 8, uint64_t), W64, CAS_NEW) == 1);
    CHECK("CAS64 that does not", CAS64(AT(page, 8, uint64_t), W64, 1) == 0);
    CHECK("CAS64's word", READ64(AT(page, 8, uint64_t)) == CAS_NEW);
    CHECK("FAD64", FAD64(AT(page, 32, int64_t), 5) == 0 && FAD64(AT(page, 32, int64_t), -7) == 5);
    CHECK("SWAP64", SWAP64(AT(page, 40, uint64_t), 77) == 0 && SWAP64(AT(page, 40, uint64_t), 78) == 77);
    CHECK("a call that succeeds leaves no error", unimem_last_error() == UNIMEM_OK);

    static char seen[PAGE];
    static uint8_t want[PAGE];
    expected_page(want);
    CHECK("READ4K", READ4K(page, seen) == PAGE && memcmp(seen, want, PAGE) == 0);
}

/* The same with the _e variants, which return a status and deliver the value. */
static void status_calls(char *page)
{
    char c = 0;
    uint32_t v32 = 0;
    uint64_t v64 = 0, swapped = 9;
    int64_t old = 1;
    CHECK_RETURNS("WRITE8_e", WRITE8_e(page + 1, 'x'), UNIMEM_OK, 0);
    CHECK_RETURNS("READ8_e", READ8_e(page + 1, &c), UNIMEM_OK, 0);
    CHECK("READ8_e's value", c == 'x');
    CHECK_RETURNS("WRITE32_e", WRITE32_e(AT(page, 4, uint32_t), W32), UNIMEM_OK, 0);
    CHECK_RETURNS("READ32_e", READ32_e(AT(page, 4, uint32_t), &v32), UNIMEM_OK, 0);
    CHECK("READ32_e's value", v32 == W32);
    CHECK_RETURNS("WRITE64_e", WRITE64_e(AT(page, 8, uint64_t), W64), UNIMEM_OK, 0);
    CHECK_RETURNS("READ64_e", READ64_e(AT(page, 8, uint64_t), &v64), UNIMEM_OK, 0);
    CHECK("READ64_e's value", v64 == W64);
    uint64_t pair[2] = { W128_LOW, W128_HIGH };
    CHECK_RETURNS("WRITE128_e", WRITE128_e(AT(page, 16, uint64_t), pair), UNIMEM_OK, 0);
    CHECK_RETURNS("CAS64_e that swaps", CAS64_e(AT(page, 8, uint64_t), W64, CAS_NEW, &swapped), UNIMEM_OK, 0);
    CHECK("CAS64_e swapped", swapped == 1);
    CHECK_RETURNS("CAS64_e that does not", CAS64_e(AT(page, 8, uint64_t), W64, 1, &swapped), UNIMEM_OK, 0);
    CHECK("CAS64_e did not swap", swapped == 0);
    CHECK_RETURNS("FAD64_e", FAD64_e(AT(page, 32, int64_t), 5, &old), UNIMEM_OK, 0);
    CHECK("FAD64_e's old value", old == 0);
    CHECK_RETURNS("FAD64_e", FAD64_e(AT(page, 32, int64_t), -7, &old), UNIMEM_OK, 0);
    CHECK("FAD64_e's old value", old == 5);
    CHECK_RETURNS("SWAP64_e", SWAP64_e(AT(page, 40, uint64_t), 77, &v64), UNIMEM_OK, 0);
    CHECK_RETURNS("SWAP64_e", SWAP64_e(AT(page, 40, uint64_t), 78, &v64), UNIMEM_OK, 0);
    CHECK("SWAP64_e's old value", v64 == 77);

    static char seen[PAGE];
    static uint8_t want[PAGE];
    expected_page(want);
    CHECK_RETURNS("READ4K_e", READ4K_e(page, seen), UNIMEM_OK, 0);
    CHECK("READ4K_e's page", memcmp(seen, want, PAGE) == 0);
}

/* What the _e variants refuse, with the status unimem.h gives; a value is written only on
 * success. second is the last page of the allocation. */
static void refusals(char *page, char *second)
{
    uint64_t v64 = 0x77, swapped;
    uint32_t v32;
    int64_t old;
    char c;
    static char seen[PAGE];
    uint64_t pair[2] = { 1, 2 };
    CHECK_RETURNS("READ64_e unaligned", READ64_e(AT(page, 4, uint64_t), &v64), UNIMEM_E_UNALIGNED, 0);
    CHECK("no value on failure", v64 == 0x77);
    CHECK("the last error is the status", unimem_last_error() == UNIMEM_E_UNALIGNED);
    CHECK_RETURNS("READ32_e unaligned", READ32_e(AT(page, 2, uint32_t), &v32), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("WRITE32_e unaligned", WRITE32_e(AT(page, 1, uint32_t), 1), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("WRITE64_e unaligned", WRITE64_e(AT(page, 12, uint64_t), 1), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("WRITE128_e unaligned", WRITE128_e(AT(page, 20, uint64_t), pair), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("WRITE128_e across the page's end", WRITE128_e(AT(second, PAGE - 8, uint64_t), pair),
                 UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("CAS64_e unaligned", CAS64_e(AT(page, 4, uint64_t), 0, 1, &swapped), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("FAD64_e unaligned", FAD64_e(AT(page, 36, int64_t), 1, &old), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("SWAP64_e unaligned", SWAP64_e(AT(page, 44, uint64_t), 1, &v64), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("READ4K_e unaligned", READ4K_e(page + 8, seen), UNIMEM_E_UNALIGNED, 0);
    CHECK_RETURNS("READ8_e without a value", READ8_e(page, NULL), UNIMEM_E_NULL, 0);
    CHECK_RETURNS("READ64_e without a value", READ64_e(AT(page, 8, uint64_t), NULL), UNIMEM_E_NULL, 0);
    CHECK_RETURNS("WRITE128_e without values", WRITE128_e(AT(page, 16, uint64_t), NULL), UNIMEM_E_NULL, 0);
    CHECK_RETURNS("READ4K_e without a buffer", READ4K_e(page, NULL), UNIMEM_E_NULL, 0);
    CHECK_RETURNS("CAS64_e without swapped", CAS64_e(AT(page, 8, uint64_t), 0, 1, NULL), UNIMEM_E_NULL, 0);

    CHECK("freeSharedPage frees both pages", freeSharedPage(page) == 2 && unimem_last_error() == UNIMEM_OK);
    CHECK_RETURNS("READ8_e of a freed page", READ8_e(page, &c), UNIMEM_E_UNMAPPED, 0);
    CHECK_RETURNS("WRITE64_e to a freed page", WRITE64_e(AT(second, 0, uint64_t), 1), UNIMEM_E_UNMAPPED, 0);
    CHECK_ERROR("freeSharedPage of a freed page", freeSharedPage(page) == 0, UNIMEM_E_UNMAPPED);
}

/* The child: another domain on another node, with the report page as its thread argument.
 * Word 1 names a read-only page, word 2 a private one; word 3 counts its adds. */
static int child(uint64_t *report)
{
    CHECK("the child holds its opcode", unimem_mailbox_register(OP_ALIVE, 'r', 0) == UNIMEM_OK);
    CHECK("the thread argument names the parent's page", (uint64_t)report >> 48 != getBoardPid());
    uint64_t *read_only = (uint64_t *)(uintptr_t)READ64(report + 1);
    uint64_t *private = (uint64_t *)(uintptr_t)READ64(report + 2);
    uint64_t v = 0;
    CHECK_RETURNS("another domain reads a read-only page", READ64_e(read_only, &v), UNIMEM_OK, 0);
    CHECK("the read-only page's word", v == READ_ONLY_VALUE);
    CHECK_RETURNS("another domain writes a read-only page", WRITE64_e(read_only, 1), UNIMEM_E_PERMISSION_DENIED, 0);
    CHECK_RETURNS("another domain reads a private page", READ64_e(private, &v), UNIMEM_E_PERMISSION_DENIED, 0);
    CHECK_RETURNS("another domain writes a private page", WRITE64_e(private, 1), UNIMEM_E_PERMISSION_DENIED, 0);
    CHECK_ERROR("another domain frees a private page", freeSharedPage(private) == 0, UNIMEM_E_PERMISSION_DENIED);
    CHECK("another domain adds on a shared page", FAD64((int64_t *)(report + 3), 1) == 0);
    WRITE64(report, CHILD_DONE | (uint64_t)failed);
    printf("c-gsas-calls child: %d of %d checks failed; now READ64 of an unaligned address, which ends it\n",
           failed, checks);
    READ64(AT(report, 4, uint64_t));
    printf("c-gsas-calls child: READ64 of an unaligned address returned\n");
    return 1;
}

/* Sharing modes, and the child that tries them. */
static void domains_and_fork(uint64_t me, uint64_t other, uint64_t nodes)
{
    uint64_t *report = allocSharedPage(1, me);
    uint64_t *read_only = unimem_alloc_shared_page(1, me, UNIMEM_READ_ONLY);
    uint64_t *private = unimem_alloc_shared_page(1, me, UNIMEM_PRIVATE);
    CHECK("pages of every sharing mode", report != NULL && read_only != NULL && private != NULL);
    if (report == NULL || read_only == NULL || private == NULL)
        return;
    WRITE64(read_only, READ_ONLY_VALUE);
    WRITE64(private, PRIVATE_VALUE);
    CHECK("the owner reads its private page", READ64(private) == PRIVATE_VALUE);
    WRITE64(report + 1, (uint64_t)(uintptr_t)read_only);
    WRITE64(report + 2, (uint64_t)(uintptr_t)private);

    CHECK_ERROR("sharing mode 3", unimem_alloc_shared_page(1, other, 3) == NULL, LOCAL_BAD_ARGUMENT);
    CHECK_ERROR("0 pages", allocSharedPage(0, other) == NULL, LOCAL_BAD_ARGUMENT);
    CHECK_ERROR("too many pages", allocSharedPage(UNIMEM_MAX_ALLOC_PAGES + 1, other) == NULL, LOCAL_BAD_ARGUMENT);
    CHECK_ERROR("a page on no node", allocSharedPage(1, nodes) == NULL, UNIMEM_E_NO_SUCH_NODE);

    char too_long[_MAX_FORK_PATH_FILENAME_ + 2];
    memset(too_long, 'a', sizeof too_long - 1);
    too_long[sizeof too_long - 1] = 0;
    CHECK_ERROR("remoteFork of NULL", remoteFork(NULL, 1, other) == 0, UNIMEM_E_NULL);
    CHECK_ERROR("remoteFork of a name too long", remoteFork(too_long, 1, other) == 0, LOCAL_BAD_ARGUMENT);
    CHECK_ERROR("remoteFork of no program", remoteFork("no-such-program", 1, other) == 0,
                UNIMEM_E_SERVICE + UNIMEM_GSAS_SPAWN_FAILED);
    CHECK_ERROR("remoteFork with the empty argument", remoteFork("c-gsas-calls", _EMPTY_THREAD_ARGUMENT_, other) == 0,
                LOCAL_BAD_ARGUMENT);
    CHECK_ERROR("remoteFork to no node", remoteFork("c-gsas-calls", 1, nodes) == 0, UNIMEM_E_NO_SUCH_NODE);

    uint64_t handle = remoteFork("c-gsas-calls", (uint64_t)(uintptr_t)report, other);
    CHECK("remoteFork", handle != 0 && unimem_last_error() == UNIMEM_OK);
    uint64_t give_up = unimem_sys_time_us() + CHILD_US, verdict = 0;
    while (handle != 0 && (verdict = READ64(report)) == 0 && unimem_sys_time_us() < give_up)
        unimem_sys_sleep_us(10000);
    CHECK("the child's checks", verdict == CHILD_DONE);
    CHECK("the child's add", READ64(report + 3) == 1);
    /* Its end: once its opcode is released, nobody receives it. */
    uint64_t s = 0;
    while (handle != 0 && (s = unimem_mailbox_send(other, UNIMEM_MESSAGE(OP_ALIVE, 0))) !=
                              UNIMEM_E_SERVICE + UNIMEM_GSAS_NO_RECEIVER &&
           unimem_sys_time_us() < give_up)
        unimem_sys_sleep_us(10000);
    CHECK("the child has ended", s == UNIMEM_E_SERVICE + UNIMEM_GSAS_NO_RECEIVER);

    CHECK("freeing the pages", freeSharedPage(report) == 1 && freeSharedPage(read_only) == 1 &&
                                   freeSharedPage(private) == 1);
}

int main(int argc, char **argv)
{
    uint64_t arg = readThreadArgument();
    if (arg != _EMPTY_THREAD_ARGUMENT_)
        return child((uint64_t *)(uintptr_t)arg);
    uint64_t me = getBoardPid(), nodes = getNumberBoards(), other = (me + 1) % nodes;
    system_calls(argc, argv);
    if (nodes >= 2) {
        char *page = allocSharedPage(2, other);
        CHECK("allocSharedPage", page != NULL && (uint64_t)(uintptr_t)page >> 48 == other &&
                                     (uint64_t)(uintptr_t)page % PAGE == 0 && unimem_last_error() == UNIMEM_OK);
        if (page != NULL) {
            seed_calls(page);
            status_calls(page + PAGE);
            refusals(page, page + PAGE);
        }
        domains_and_fork(me, other, nodes);
    }
    int status = verdict("c-gsas-calls");
    fflush(stdout);
    unimem_sys_exit((uint64_t)status);
}
