/* file_io.h — layout shared by engine/probes/file_io.bpf.c and engine/probes/file_io.c.
 * Must not: hold anything but the layouts and sizes both sides use.
 */
#ifndef DIAG_FILE_IO_H
#define DIAG_FILE_IO_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define FILE_IO_NR_SLOTS 512   /* syscall numbers the watch table covers */
#define FILE_IO_CLASSES 16     /* watched syscalls, each its own histogram */
#define FILE_IO_HIST_SLOTS 32  /* log2 slots of latency in us */

#define FILE_IO_STAT_NO_FD 3   /* stats slot: calls whose fd is not an fd (msync, sync) */

/* watch table entry (rodata, by syscall number): 0 = not watched, else class + 1; the high bit
 * says the first argument is a file descriptor, the next one that it is a sync-class call
 * (fsync, fdatasync, sync_file_range, msync, syncfs, sync) whose user stack is kept. */
#define FILE_IO_HAS_FD 0x80
#define FILE_IO_SYNC 0x40
#define FILE_IO_CLASS_MASK 0x3f

/* A call in progress (task local storage). */
struct file_io_entry {
	__u64 start_ns; /* 0: not inside a watched call */
	__s32 fd;       /* -1: the call has no fd */
	__u16 nr;
	__u8 watch;     /* the watch table entry */
	__u8 pad;
};

/* Totals per (process, syscall, fd, user stack) (map `calls`). */
struct file_io_key {
	__u32 tgid;
	__s32 fd;
	__s32 user_stack_id; /* sync-class calls with stacks on; else -1 */
	__u16 nr;
	__u16 pad;
};

struct file_io_val {
	__u64 count, total_ns, max_ns, bytes, errors;
	char comm[16];       /* the thread that made the first call */
};

#endif
