/* demangle.h — C++ (Itanium ABI) and Rust (legacy and v0) symbol names made readable.
 *
 * Owns: the one call into libiberty's demangler (GNU binutils' own, linked statically from
 * Debian's libiberty-dev: libiberty.a is built position-independent, so it links into our PIE).
 * Must not: include libiberty's headers anywhere else (libiberty.h declares x*alloc and basename
 * too), print, or return an unbounded name.
 */
#ifndef DIAG_DEMANGLE_H
#define DIAG_DEMANGLE_H

#include <stddef.h>

/* The demangled form of a mangled name ("_Z...", "_R..."), malloc'ed, with parameter lists
 * ("ns::Class<int>::method(int)") and Rust paths without their hash; NULL when name is not
 * mangled, does not demangle, or demangles to more than max bytes. */
char *demangle(const char *name, size_t max);

#endif
