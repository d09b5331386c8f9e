/* show_usdt.h — `diagnose show --usdt BINARY`: the USDT probes of a binary (show_usdt.c). */
#ifndef DIAG_SHOW_USDT_H
#define DIAG_SHOW_USDT_H

#include <stdbool.h>

#include "common/util.h"

/* Prints the probes of binary (an absolute path; with pid > 0 also "target" or "lib:NAME", the
 * files of that process). 0, or -1 with err. */
int show_usdt(const char *binary, int pid, bool json, struct diag_err *err);

#endif
