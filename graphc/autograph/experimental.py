"""`gc.autograph.experimental`: TF 2's `tf.autograph.experimental` names --
`do_not_convert` (the same function as gc.autograph's) and the `set_loop_options`
directive."""
from .conversion import do_not_convert

__all__ = ["do_not_convert", "set_loop_options"]


class _Unspecified:
    def __repr__(self):
        return "UNSPECIFIED"


UNSPECIFIED = _Unspecified()


def set_loop_options(parallel_iterations=UNSPECIFIED, swap_memory=UNSPECIFIED,
                     maximum_iterations=UNSPECIFIED, shape_invariants=UNSPECIFIED):
    """Options for the loop whose body this call starts, as TF's directive of the same name.

    Write it as the first statement of the body of a `for` or `while` in a converted
    function. When that loop becomes a graph `while` (a loop over tensors), AutoGraph lifts
    the options onto it, as `gc.while_loop`'s arguments of the same names:

    - `shape_invariants`: a list of `(variable, shape)` pairs. The variable is one the loop
      carries (a name, or `self.x` / `d['k']` when the loop assigns it), matched by
      identity with its value before the loop; the shape (a list or tuple of ints and None,
      or None for every dimension) lets the None dimensions change across iterations.
    - `maximum_iterations`: an int or int tensor; the loop stops after that many
      iterations even if its condition still holds (None: no bound).
    - `parallel_iterations` (a positive number) and `swap_memory` are accepted and have no
      effect: graphc runs iterations one after another and keeps loop values in memory.

    Called anywhere else, or in a loop that stays a Python loop, it does nothing (as in
    TensorFlow, where the options only affect a staged `tf.while_loop`); misplaced calls
    get a `gc.autograph.AutoGraphWarning` when the function is converted.
    """
    del parallel_iterations, swap_memory, maximum_iterations, shape_invariants
