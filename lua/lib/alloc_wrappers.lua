-- alloc_wrappers.lua — the functions between a program's own code and the allocator, as data:
-- frames memory-growth skips when it names the function that allocated (and holds) memory, so
-- that a verdict says `dbAdd` or `SessionStore::remember`, never `zmalloc_usable` or `operator
-- new`. Loaded as global `alloc_wrappers`; heap.lua reads it, and with it every global
-- `alloc_wrappers_NAME` that a file lua/lib/alloc_wrappers_NAME.lua returns (a recipe author's own
-- entries: a project's xmalloc, a custom pool), the same mechanism as wait_table.lua.
--
-- Owns: the entries (runtime, function names, why), the allocators' own and their wrappers in
-- Debian 12's programs and libraries (checked against their symbols where named there).
-- Must not: hold code, thresholds or verdicts.
--
-- An entry:
--   runtime  whose functions ("glibc", "redis", ...): shown nowhere, for the reader
--   fn       frame names; a name matches a frame equal to it, a demangled C++ frame with its
--            parameters ("operator new" matches "operator new(unsigned long)"), or, ending in
--            "*" anywhere, a glob ("zmalloc*", "std::vector<*>::_M_realloc_insert*")
--   kind     wrapper (allocates for its caller: never the answer) | helper (a container or
--            constructor generic code calls to build what it keeps: skipped for naming, shown in
--            the call path)

return {
  -- ---- the allocators themselves ---------------------------------------------------------
  { runtime = "glibc", kind = "wrapper", fn = { "malloc", "calloc", "realloc", "reallocarray", "free", "cfree",
    "posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc", "_int_*", "__libc_*", "_mid_memalign",
    "sysmalloc", "tcache_*", "arena_*", "__GI_*", "_dl_*", "alloc_perturb", "__default_morecore", "__posix_memalign",
    "malloc_consolidate", "__malloc_*", "__calloc", "__realloc" } },
  -- the C library's copying and duplicating routines: the memory is the caller's
  { runtime = "glibc", kind = "wrapper", fn = { "__memset*", "__memcpy*", "__memmove*", "__mempcpy*", "memset",
    "memcpy", "memmove", "__strdup", "strdup", "strndup", "__strndup", "__wmemset*", "__asprintf", "asprintf",
    "vasprintf", "__vasprintf*", "open_memstream", "__libc_scratch_buffer*", "__GI___libc_*" } },
  { runtime = "jemalloc", kind = "wrapper", fn = { "je_*", "mallocx", "rallocx", "xallocx", "sdallocx", "dallocx",
    "imalloc*", "ialloc*", "iralloc*", "arena_*", "tcache_*", "extent_*", "ecache_*", "pac_*", "pa_*", "emap_*",
    "large_*", "malloc_default", "calloc_default", "newImpl*", "handleOOM*" } },
  { runtime = "tcmalloc", kind = "wrapper", fn = { "tc_*", "tcmalloc::*", "(anonymous namespace)::do_*",
    "TCMallocImplementation::*" } },
  { runtime = "mimalloc", kind = "wrapper", fn = { "mi_*", "_mi_*" } },
  -- ---- C++: operator new and the standard library's allocation paths -------------------------
  { runtime = "c++", kind = "wrapper", fn = { "operator new", "operator new[]", "operator new*", "operator delete*",
    "std::allocator*", "std::__new_allocator*", "__gnu_cxx::new_allocator*", "std::allocator_traits*",
    "__gnu_cxx::__alloc_traits*", "std::_Vector_base*", "std::__allocate_guarded*",
    "std::__shared_count*", "std::_Sp_counted*" } },
  { runtime = "c++", kind = "helper", fn = { "std::vector<*>::_M_realloc_insert*", "std::vector<*>::_M_realloc_append*",
    "std::vector<*>::push_back*", "std::vector<*>::emplace_back*", "std::vector<*>::reserve*",
    "std::vector<*>::_M_default_append*", "std::vector<*>::_M_fill_insert*", "std::vector<*>::_M_range_insert*",
    "std::__cxx11::basic_string<*", "std::basic_string<*", "std::_Hashtable<*", "std::__detail::*",
    "std::_Rb_tree<*", "std::deque<*", "std::_Deque_base<*", "std::__cxx11::list<*", "std::make_shared<*",
    "std::make_unique<*", "std::unordered_map<*", "std::map<*", "std::__cxx11::_List_base<*",
    "_ZNSt*", "_ZNKSt*", "_ZSt*", "_ZN9__gnu_cxx*" } },
  -- ---- common wrappers of C programs -----------------------------------------------------------
  { runtime = "c", kind = "wrapper", fn = { "xmalloc", "xcalloc", "xrealloc", "xreallocarray", "xstrdup", "xstrndup",
    "xzalloc", "xmemdup", "xnmalloc", "xcharalloc", "xmallocz", "xmemdupz", "ximalloc", "xicalloc",
    "safe_malloc", "safe_calloc", "safe_realloc", "emalloc", "ecalloc", "erealloc", "ckalloc", "ckrealloc" } },
  { runtime = "glib", kind = "wrapper", fn = { "g_malloc*", "g_malloc0*", "g_realloc*", "g_try_malloc*",
    "g_try_realloc*", "g_slice_alloc*", "g_slice_copy", "g_strdup*", "g_strndup", "g_memdup*", "g_new*",
    "g_string_sized_new", "g_string_maybe_expand", "g_array_maybe_expand", "g_ptr_array_maybe_expand" } },
  -- ---- Redis 7 (redis-server exports these: .dynsym) --------------------------------------------
  { runtime = "redis", kind = "wrapper", fn = { "zmalloc*", "ztrymalloc*", "zcalloc*", "ztrycalloc*", "zrealloc*",
    "ztryrealloc*", "zstrdup", "zmalloc_usable*", "s_malloc*", "s_realloc*", "s_trymalloc*", "s_tryrealloc*",
    "lpNew", "lpInsert*", "zipmapNew" } },
  { runtime = "redis", kind = "helper", fn = { "_sdsnewlen", "sdsnewlen", "sdstrynewlen", "sdsnew", "sdsempty",
    "sdsdup", "sdsMakeRoomFor*", "sdscatlen", "sdscpylen", "sdscat", "sdsgrowzero", "createObject",
    "createRawStringObject", "createEmbeddedStringObject", "createStringObject", "dictAddRaw", "dictAdd",
    "dictExpand", "_dictExpand", "dictTryExpand", "dictCreate", "listAddNodeHead", "listAddNodeTail", "listCreate",
    "listInsertNode", "quicklist*", "intsetAdd", "intsetNew" } },
  -- ---- CPython (with Python frames on, the Python function is named before any of these) --------
  { runtime = "cpython", kind = "wrapper", fn = { "PyMem_*", "_PyMem_*", "PyObject_Malloc", "PyObject_Calloc",
    "PyObject_Realloc", "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "pymalloc_*", "_PyObject_GC_*",
    "PyObject_GC_*", "gc_alloc", "_PyObject_New*", "PyType_GenericAlloc", "_PyType_AllocNoTrack", "_PyObject_ArenaMmap",
    "new_arena", "allocate_from_new_pool" } },
  { runtime = "cpython", kind = "helper", fn = { "list_resize", "PyList_Append", "_PyList_AppendTakeRef*", "PyList_New",
    "PyUnicode_New", "PyUnicode_Concat", "_PyUnicode_*", "unicode_*", "PyBytes_FromStringAndSize",
    "_PyBytes_Resize", "PyDict_SetItem", "insertdict", "dictresize", "new_keys_object", "_PyDict_*",
    "PyLong_From*", "_PyLong_New", "PyTuple_New", "_PyTuple_*", "list_append" } },
}
