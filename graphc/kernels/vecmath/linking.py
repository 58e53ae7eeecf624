"""Compile a numba function only as LLVM IR for callers that inline it.

The vector math reaches a kernel as calls with LLVM's `alwaysinline` (`bits.inlined`,
`vecmath._define`): the kernel links the callee's module in and optimizes it there. numba's
`Dispatcher.compile` also runs the module passes on the callee, builds its Python and C
wrappers and emits its machine code, none of which a kernel uses: per helper 20-60 ms of a
cold compile (exp alone is three of them). `compile_inline_only` compiles through the same
pipeline with the wrappers and machine code left out; the library it returns holds the
function-pass-optimized IR and is finalized by linking only.
"""
from numba.core import compiler
from numba.core.codegen import CPUCodeLibrary
from numba.core.compiler_lock import global_compiler_lock


class InlineOnlyLibrary(CPUCodeLibrary):
    """A code library that is only ever linked into another: finalizing it links its own
    dependencies and stops (no module passes, no machine code, no address to call)."""

    def finalize(self):
        self._raise_if_finalized()
        seen = set()
        for library in self._linking_libraries:
            if library not in seen:
                seen.add(library)
                self._reload_init.update(library._reload_init)
                self._final_module.link_in(library._get_module_for_linking(), preserve=True)
        self._finalized = True

    def get_pointer_to_function(self, name):
        raise RuntimeError(f"{self.name} is compiled for inlining only; it has no machine code")


_compiled = {}


@global_compiler_lock
def compile_inline_only(dispatcher, argtys):
    """numba's compile result of `dispatcher` (an njit function) for `argtys`, with its
    options (fastmath, error model), as IR for inlining: link `cres.library` and call
    `cres.fndesc` with `alwaysinline`. Cached per process."""
    key = (dispatcher, tuple(argtys))
    cres = _compiled.get(key)
    if cres is None:
        flags = compiler.Flags()
        dispatcher.targetdescr.options.parse_as_flags(flags, dispatcher.targetoptions)
        flags.no_cpython_wrapper = flags.no_cfunc_wrapper = flags.no_compile = True
        context = dispatcher.targetdescr.target_context
        library = InlineOnlyLibrary(context.codegen(), dispatcher.py_func.__qualname__)
        cres = compiler.compile_extra(dispatcher.targetdescr.typing_context, context,
                                      dispatcher.py_func, tuple(argtys), None, flags,
                                      dispatcher.locals, library=library)
        _compiled[key] = cres
    return cres
