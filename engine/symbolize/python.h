/* python.h — CPython processes, for stack probes that read Python frames in BPF
 * (engine/abi/diag_python.h).
 *
 * Owns: whether a process runs CPython and which (its Py_Version, read from its memory; the
 * mapped interpreter or libpython that holds _PyRuntime), the layout of that version's
 * structures (a table made from each version's own headers, 3.13's checked against the debug
 * offsets the interpreter carries at the start of _PyRuntime), where its evaluation loop is
 * (_PyEval_EvalFrameDefault, whose native frames the Python ones replace), and the names of the
 * frames the walk sent: a code object's qualified name, file and the line of the instruction,
 * read from the process's memory (through tfile: a target cannot stall the run), cached per code
 * object; and a thread's frame chain read the same way (python_thread_frames).
 * Must not: guess a layout (a version not in the table is reported as such, and its samples keep
 * their native frames), trust what it reads (lengths capped, string kinds checked, a code
 * object's type checked against PyCode_Type), or print.
 */
#ifndef DIAG_PYTHON_H
#define DIAG_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/diag_python.h"

struct tfile_reader;
struct python_procs;

/* The processes looked at in one probe's run; files: how the target is read (not owned). */
struct python_procs *python_procs_new(struct tfile_reader *files);
void python_procs_free(struct python_procs *py);

/* Looks at process tgid (once; later calls give the same answer): 1 and *out when it runs a
 * CPython whose layout is known; 0 when it runs none; -1 when it runs one whose frames cannot be
 * read (an unknown version, a free-threaded build, a runtime that cannot be read): why in
 * python_procs_runtime. */
int python_procs_probe(struct python_procs *py, int tgid, struct diag_py_proc *out);
/* What the processes looked at run, in one line for the report ("CPython 3.11.2", "CPython 3.14.0:
 * no known layout, native frames only", ...; the first Python process's), or NULL when none
 * ran Python. */
const char *python_procs_runtime(const struct python_procs *py);
/* Whether addr is in the evaluation loop (_PyEval_EvalFrameDefault) of process tgid. */
bool python_procs_is_eval(const struct python_procs *py, int tgid, uint64_t addr);

/* The Python frames of thread tid of process tgid now, read from user space (through the reader's
 * helpers, word by word: the walk diag_python.h makes in BPF for the current task, for a task a
 * program cannot read itself, e.g. a snapshot's blocked thread): fills *r as that walk would
 * (flags say why frames are missing). 0, or -1 when the process runs no readable CPython. */
int python_thread_frames(struct python_procs *py, int tgid, int tid, struct diag_py_rec *r);

/* A Python frame as one 64-bit stack slot (the sampler keeps frames as addresses): the code
 * object (8-aligned, below 2^47) and the instruction's distance from it (below 2^20; else 0:
 * no line). */
uint64_t python_frame_pack(uint64_t code, uint64_t instr);
void python_frame_unpack(uint64_t slot, uint64_t *code, uint64_t *instr);

/* A native user stack (ips, leaf first, n of at most max, with each frame's origin: enum
 * frame_origin of unwind.h) of process tgid with its thread's Python frames f[0..nf) (innermost
 * first, as the BPF walk sent them) in place of the evaluation loop's frames they ran in: the
 * frames from the innermost up to the first of a C call of the loop replace the innermost
 * _PyEval_EvalFrameDefault frame, and so on outwards; frames left over (the native walk lost the
 * outer loop frames: an interpreter without frame pointers) go after the last Python frame
 * placed, or after the native frames when none was (*unplaced set). Python frames are packed
 * slots of origin FRAME_PY (python_stack_namer names them). Returns the new number of frames. */
size_t python_splice(const struct python_procs *py, int tgid, const struct diag_py_frame *f,
		     uint32_t nf, uint64_t *ips, uint8_t *from, size_t n, size_t max, bool *unplaced);
/* Names a packed Python frame of process tgid (stacks.h's stacks_frame_namer; arg: the python_procs). */
int python_stack_namer(void *arg, int tgid, uint64_t slot, char *buf, size_t len);

/* Writes the name of the frame (code, instr) of process tgid into buf: "qualname (file:line)",
 * "qualname (file)" when the line is not known, or "[python 0xCODE]" when the code object
 * cannot be read. Returns 1 when named from the code object, 0 otherwise. */
int python_frame_name(struct python_procs *py, int tgid, uint64_t code, uint64_t instr, char *buf,
		      size_t len);

/* What the user-space side reads of a version: code objects, strings (offsets in bytes). */
struct py_user_layout {
	uint16_t co_filename, co_qualname, co_firstlineno, co_linetable, co_code_adaptive;
	uint16_t ascii_data;   /* sizeof(PyASCIIObject): a compact ASCII string's characters */
	uint16_t compact_data; /* sizeof(PyCompactUnicodeObject): a compact string's otherwise */
};
/* The layout of CPython 3.minor (for tests: checked against that version's headers), or false
 * when the table has none. */
bool python_layout(unsigned minor, struct diag_py_layout *bpf, struct py_user_layout *user);

/* The line of the instruction at byte offset `offset` of a code object, by its location table
 * (co_linetable, the format of 3.11 to 3.13) from first_line; -1 when the table gives none. */
int python_linetable_line(const uint8_t *table, size_t len, int first_line, uint64_t offset);

#endif
