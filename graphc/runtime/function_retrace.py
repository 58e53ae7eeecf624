"""What gc.function says when it retraces too often, or creates variables twice."""
from . import signature as sig


def _variables_again(name):
    return ValueError(
        f"{name}() created a gc.Variable on a trace after its first. gc.function allows "
        "creating variables only once, as tf.function does: create them outside the function, "
        "or guard the creation (`if self.w is None: self.w = gc.Variable(...)`) so that only "
        "the first trace makes them.")


def _retrace_message(f, old, new):
    names = f._signature.names
    diff = None
    for name, a, b in zip(names, old, new):
        diff = sig.first_difference(a, b, name)
        if diff:
            break
    head = (f"gc.function '{f._name}' has been traced {f.tracing_count} times; every retrace "
            "costs a full trace and compile.")
    if diff is None:
        return head
    path, a, b = diff
    change = f" Argument {path} keeps changing: {path}: {sig.describe(a)} -> {sig.describe(b)}."
    if a[0] == sig.TENSOR and b[0] == sig.TENSOR and a[1] is b[1] and len(a[2]) == len(b[2]):
        specs = _suggest_specs(f, new, a, b)
        fix = (f" Fix: input_signature=[{specs}], or reduce_retracing=True."
               if specs else " Fix: reduce_retracing=True.")
    elif a[0] == sig.PY and b[0] == sig.PY and a[1] is b[1] and f._reduce_retracing \
            and b[1] is float and f.input_signature is None and path in names:
        fix = (" It is a Python float: with reduce_retracing=True, new values of it are "
               "passed as a float32 tensor from now on (one trace for all values).")
    elif a[0] == sig.PY and b[0] == sig.PY and a[1] is b[1]:
        fix = (f" It is a Python {b[1].__name__}, and each new value traces a new graph. Fix: "
               f"pass it as a tensor (gc.constant(...)) so its value is not baked in.")
    elif a[0] == sig.PY:
        fix = (" Python values are keyed by type and value, so each new one traces a new graph. "
               "Fix: pass it as a tensor (gc.constant(...)) so its value is not baked in.")
    elif a[0] == sig.OBJ:
        fix = (" It is a Python object keyed by identity, and it is a new object on every call. "
               "Fix: reuse one object, or pass its tensors as arguments.")
    else:
        fix = " Fix: keep the argument's structure and dtypes fixed between calls."
    return head + change + fix


def _suggest_specs(f, new, a, b):
    """A ready-to-paste input_signature when every argument is a plain tensor."""
    if not all(k[0] == sig.TENSOR for k in new):
        return None
    generalized = []
    for keys in zip(*f._keys, new):
        shape = keys[0][2]
        for k in keys[1:]:
            if len(k[2]) != len(shape):
                return None
            shape = tuple(x if x == y else None for x, y in zip(shape, k[2]))
        dims = ", ".join("None" if d is None else str(d) for d in shape)
        generalized.append(f"gc.TensorSpec([{dims}], gc.{keys[0][1].name})")
    return ", ".join(generalized)
