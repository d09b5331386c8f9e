// SPDX-License-Identifier: GPL-2.0
/* floor.bpf.c — the benchmark's floor: an empty program on raw_tp/sys_enter. Whatever a syscall
 * probe costs beyond this is the probe's own work. */
#include "abi/vmlinux.h"
#include <bpf/bpf_helpers.h>

SEC("raw_tp/sys_enter")
int floor_sys_enter(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
