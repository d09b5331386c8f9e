/* demangle.c — symbol demangling through libiberty's cplus_demangle (see demangle.h).
 *
 * Owns: the options: DMGL_PARAMS | DMGL_ANSI (parameter lists, const/volatile), DMGL_RUST then
 * DMGL_GNU_V3 tried in that order (a Rust legacy name is also a valid C++ name: "_ZN...17h<hash>E"
 * is Rust when its last element is a hash, which rust_demangle checks); never DMGL_VERBOSE (no
 * Rust hashes or crate disambiguators in a frame name).
 * Must not: print, or keep the demangler's output past the bound. The demangler is libiberty's
 * (recursion-limited); our xmalloc/xstrdup, which cplus-dem.o calls, have libiberty's contract.
 */
#include "symbolize/demangle.h"

#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

char *demangle(const char *name, size_t max)
{
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	char *d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_RUST);
	if (!d)
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_GNU_V3);
	if (d && strlen(d) > max) {
		free(d);
		d = NULL;
	}
	return d;
}
