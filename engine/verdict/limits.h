/* limits.h — the verdict phase's default limits (struct verdict_input's 0), one place for the
 * sandbox, the in-process run and the child that share them.
 * Must not: hold anything but the numbers.
 */
#ifndef DIAG_VERDICT_LIMITS_H
#define DIAG_VERDICT_LIMITS_H

#define VERDICT_DEFAULT_MAX_INSTRUCTIONS (50u * 1000 * 1000)
#define VERDICT_DEFAULT_MAX_MEMORY (64u << 20)
/* Above what the instruction limit allows (50 M instructions of proxy-heavy Lua, as high-cpu.lua
 * on 16384 stacks, take about 6 s on an idle machine): a backstop for time inside C calls. */
#define VERDICT_DEFAULT_MAX_MS 10000u
#define VERDICT_DEFAULT_MAX_NODES (200u * 1000)
#define VERDICT_DEFAULT_MAX_TEXT_BYTES (16u << 20)

#endif
