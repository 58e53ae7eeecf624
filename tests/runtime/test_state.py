"""gc.Variable, gc.Module, gc.print and gc.random: live state and ordered side effects."""
import io

import numpy as np
import pytest

import graphc as gc


def test_tf_tutorial_print_behaviour(capsys):
    @gc.function
    def f(x):
        print("The function is running in Python")
        gc.print(x)
    f(gc.constant(1)); f(gc.constant(2)); f(np.array(2, dtype=np.int32))
    f(gc.constant(0.1)); f(gc.constant(0.2))
    assert capsys.readouterr().out.split("\n") == [
        "The function is running in Python", "1", "2", "2",
        "The function is running in Python", "0.1", "0.2", ""]

    @gc.function
    def g(x):
        return x
    g(1); g(2); g(1)
    assert g.tracing_count == 2


def test_tf_tutorial_variable_behaviour(capsys):
    x = gc.Variable(1.0)

    @gc.function
    def outer_var():
        x.assign_add(1.0)
        gc.print(x)
        return x
    assert float(outer_var()) == 2.0
    assert float(outer_var()) == 3.0
    assert capsys.readouterr().out == "2.0\n3.0\n"   # numpy's format, as API.md says
    x.assign(10.0)                        # changed outside: the graph reads the live value
    assert float(outer_var()) == 11.0


def test_outer_list_changes_only_while_tracing():
    items = []

    @gc.function
    def f(x):
        items.append(x)
        return x + 1
    for v in (1, 2, 3):
        f(gc.constant(v))
    assert len(items) == 1 and items[0].is_symbolic


def _reads_and_writes(v, d):
    a = v.read_value()
    v.assign_add(d)
    b = v * 1.0
    v.assign_sub(d * 2.0)
    v.assign(v * 10.0)
    gc.print("a", a, "b", b, "v", v, sep="|")
    return a, b, v.read_value()


def test_variable_reads_and_writes_keep_program_order(capsys):
    d = gc.constant([1.0, 1.0])
    v_eager = gc.Variable([1.0, 2.0])
    eager = _reads_and_writes(v_eager, d)
    eager_out = capsys.readouterr().out
    v = gc.Variable([1.0, 2.0])
    f = gc.function(lambda d: _reads_and_writes(v, d))
    traced = f(d)
    for got, want in zip(traced + (v,), eager + (v_eager,)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert capsys.readouterr().out == eager_out
    np.testing.assert_allclose(traced[0].numpy(), [1, 2])
    np.testing.assert_allclose(traced[1].numpy(), [2, 3])
    np.testing.assert_allclose(traced[2].numpy(), [0, 10])
    assert eager_out == "a|[1. 2.]|b|[2. 3.]|v|[ 0. 10.]\n"
    # every read and write in the graph, in program order (each `v` used as a value is a read)
    effects = [op.type for op in f.concrete_functions()[0].graph.operations
               if op.type in ("read_variable", "assign_add_variable", "assign_sub_variable",
                              "assign_variable", "print")]
    assert effects == ["read_variable", "assign_add_variable", "read_variable",
                       "assign_sub_variable", "read_variable", "assign_variable",
                       "read_variable", "print", "read_variable"]


def test_variable_passed_as_argument_is_fed_by_reference():
    @gc.function
    def bump(var, d):
        var.assign_add(d)
        return var.read_value()
    a, b = gc.Variable(1.0), gc.Variable(100.0)
    assert float(bump(a, gc.constant(1.0))) == 2.0
    assert float(bump(b, gc.constant(1.0))) == 101.0      # same trace, other variable
    assert bump.tracing_count == 1
    assert float(a.numpy()) == 2.0 and float(b.numpy()) == 101.0
    bump(gc.Variable([1.0, 2.0]), gc.constant([1.0, 1.0]))  # another shape: new trace
    assert bump.tracing_count == 2


def test_variable_errors():
    v = gc.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match=r"assign: variable has shape \[2\] but the value has shape \[3\]"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="int32"):
        v.assign(gc.constant([1, 2]))
    with pytest.raises(ValueError, match="int32"):      # what TF raises for it
        v.assign_add(gc.constant([1, 2]))
    with pytest.raises(TypeError, match="fractional"):
        gc.Variable(1).assign(1.5)
    assert gc.Variable(1.0, dtype=gc.float64).dtype == gc.float64
    assert gc.Variable(np.zeros((2, 3), np.int64)).shape == (2, 3)


def test_variable_works_wherever_a_tensor_does():
    v = gc.Variable([[1.0, 2.0]])
    assert float((v + 1.0)[0, 1]) == 3.0
    np.testing.assert_allclose(np.asarray(v * v), [[1.0, 4.0]])
    np.testing.assert_allclose(gc.exp(v).numpy(), np.exp([[1.0, 2.0]]), rtol=1e-6)
    assert "Variable" in repr(v) and v.trainable and v.name


def test_creating_variables_unconditionally_fails_on_first_call():
    @gc.function
    def f(x):
        w = gc.Variable(1.0)
        return x * w
    with pytest.raises(ValueError, match="created a gc.Variable on a trace after its first"):
        f(gc.constant(1.0))


def test_create_once_idiom_keeps_initial_value_from_first_call():
    class Dense(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @gc.function
        def __call__(self, x):
            if self.w is None:
                self.w = gc.Variable(gc.ones([3]) * 2.0)
            return x * self.w
    layer = Dense()
    np.testing.assert_allclose(layer(gc.ones([3])).numpy(), [2, 2, 2])
    layer.w.assign([1.0, 1.0, 1.0])
    np.testing.assert_allclose(layer(gc.ones([3])).numpy(), [1, 1, 1])
    assert layer.__call__.tracing_count == 2     # the creating trace, then the checked one (TF: 2)
    np.testing.assert_allclose(layer(gc.ones([2, 3])).numpy(), np.ones((2, 3)))  # retrace: no new var
    assert layer.variables == (layer.w,)


def test_variable_creation_on_a_later_trace_raises():
    state = {}

    @gc.function
    def f(x):
        if x.shape[0] == 2 and "a" not in state:
            state["a"] = gc.Variable(1.0)
        if x.shape[0] == 3:
            state["b"] = gc.Variable(1.0)
        return x
    f(gc.ones([2]))
    with pytest.raises(ValueError, match="only once"):
        f(gc.ones([3]))


def test_variable_initial_value_may_depend_on_the_first_calls_arguments():
    """As in TF (an initializer it cannot lift runs on the first call): `gc.Variable(x * 2)`
    under the create-once idiom starts from the first call's x and keeps that value."""
    class Lazy(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        @gc.function
        def __call__(self, x):
            if self.w is None:
                self.w = gc.Variable(x * 2.0)
            self.w.assign_add(gc.ones_like(x))
            return self.w + x
    m = Lazy()
    np.testing.assert_array_equal(m(gc.constant([1.0, 2.0])).numpy(), [4.0, 7.0])
    np.testing.assert_array_equal(m.w.numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(m(gc.constant([5.0, 5.0])).numpy(), [9.0, 11.0])
    np.testing.assert_array_equal(Lazy()(np.array([1.0], np.float32)).numpy(), [4.0])

    holder = []

    @gc.function
    def from_variable_argument(v, x):
        if not holder:
            holder.append(gc.Variable(v * 2.0 + x))
        return holder[0] + 0.0
    src = gc.Variable(3.0)
    assert from_variable_argument(src, gc.constant(1.0)).numpy() == 7.0
    assert from_variable_argument(src, gc.constant(5.0)).numpy() == 7.0


def test_variable_initial_value_from_an_argument_without_a_value_raises():
    holder = []

    @gc.function
    def f(x):
        if not holder:
            holder.append(gc.Variable(x * 2.0))
        return x
    with pytest.raises(ValueError, match="depends on 'x'"):
        f.get_concrete_function(gc.TensorSpec([], gc.float32))


def test_module_tracks_variables_and_submodules_in_stable_order():
    class Inner(gc.Module):
        def __init__(self):
            super().__init__()
            self.b = gc.Variable(0.0, name="b")
            self.frozen = gc.Variable(0.0, trainable=False, name="frozen")

    class Outer(gc.Module):
        def __init__(self):
            super().__init__(name="outer")
            self.layers = [Inner(), Inner()]
            self.table = {"z": gc.Variable(1.0, name="z"), "a": gc.Variable(2.0, name="a")}
            self.same = self.layers[0]           # shared: listed once
    m = Outer()
    assert m.name == "outer" and Inner().name == "inner"
    # as tf.Module: the module's own attributes first (sorted by name: layers, same,
    # table), then each submodule found there, the same way
    names = [v.name for v in m.variables]
    assert names == ["a:0", "z:0", "b:0", "frozen:0", "b:0", "frozen:0"]  # TF's names
    assert [v.name for v in m.trainable_variables] == ["a:0", "z:0", "b:0", "b:0"]
    assert m.submodules == (m.layers[0], m.layers[1])

    class Deep(gc.Module):
        def __init__(self):
            super().__init__()
            self.x = gc.Variable(0.0, name="x")
            self.child = Outer()
            self.w = gc.Variable(0.0, name="w")
    d = Deep()
    assert [v.name for v in d.variables] == ["w:0", "x:0", "a:0", "z:0", "b:0", "frozen:0",
                                             "b:0", "frozen:0"]
    assert d.submodules == (d.child, d.child.layers[0], d.child.layers[1])
    with pytest.raises(ValueError):
        gc.Module(name="bad name")


def test_print_to_stream_and_sep_end():
    buf = io.StringIO()

    @gc.function
    def f(x):
        gc.print("x =", x, [1, 2], sep=";", end="!\n", output_stream=buf)
        return x
    f(gc.constant([5, 6])); f(gc.constant([7, 8]))
    assert buf.getvalue() == "x =;[5 6];[1, 2]!\nx =;[7 8];[1, 2]!\n"
    gc.print(gc.constant(3), output_stream=buf)           # eager
    assert buf.getvalue().endswith("3\n")


def test_print_uses_sys_stdout_at_time_of_printing(monkeypatch):
    @gc.function
    def f(x):
        gc.print(x)
    f(gc.constant(1))
    buf = io.StringIO()
    monkeypatch.setattr("sys.stdout", buf)
    f(gc.constant(2))
    assert buf.getvalue() == "2\n"


def test_random_is_fresh_per_call_and_reproducible_with_seed():
    @gc.function
    def f():
        return gc.random.normal([4]), gc.random.uniform([3], 2.0, 5.0, dtype=gc.float64)
    gc.random.set_seed(7)
    a1, u1 = f()
    a2, u2 = f()
    assert not np.allclose(a1.numpy(), a2.numpy())        # not baked in at trace time
    assert u1.dtype == gc.float64 and np.all((u1.numpy() >= 2) & (u1.numpy() < 5))
    gc.random.set_seed(7)
    b1, _ = f()
    np.testing.assert_array_equal(a1.numpy(), b1.numpy())
    gc.random.set_seed(7)
    e1 = gc.random.normal([4])                           # eager draws from the same stream
    np.testing.assert_array_equal(a1.numpy(), e1.numpy())
    assert gc.random.normal([2, 3], seed=3).shape == (2, 3)
    with pytest.raises(TypeError, match="floating dtype"):
        gc.random.normal([2], dtype=gc.int32)


def test_random_statistics():
    gc.random.set_seed(0)
    x = gc.random.normal([20000], mean=3.0, stddev=2.0).numpy()
    assert abs(x.mean() - 3.0) < 0.1 and abs(x.std() - 2.0) < 0.1


def test_updates_never_change_values_read_earlier():
    v = gc.Variable(np.ones(3, np.float32))
    before = v.read_value()
    v.assign_add(np.ones(3, np.float32))        # `before` still refers to the old array
    v.assign_sub(np.full(3, 0.5, np.float32))   # sole owner now: may update in place
    np.testing.assert_array_equal(before.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(v.numpy(), [1.5, 1.5, 1.5])

    @gc.function
    def f():
        a = v.read_value()
        v.assign_add(np.ones(3, np.float32))
        return a
    kept = [f(), f()]
    np.testing.assert_array_equal(kept[0].numpy(), [1.5] * 3)
    np.testing.assert_array_equal(kept[1].numpy(), [2.5] * 3)
    np.testing.assert_array_equal(v.numpy(), [3.5] * 3)


def test_default_module_names_follow_tf_camel_to_snake():
    """tf.Module names an unnamed module by its class, acronyms kept as one word."""
    class MLP(gc.Module):
        pass

    class HTTPServer(gc.Module):
        pass

    class MyModel(gc.Module):
        pass

    class ResNet50(gc.Module):
        pass
    assert [MLP().name, HTTPServer().name, MyModel().name, ResNet50().name] == \
        ["mlp", "http_server", "my_model", "res_net50"]
    assert gc.Module().name == "module"


def test_assign_returns_and_in_place_operators_as_tf():
    """assign* return the variable (chainable, reading the new value), None with
    read_value=False; `v += x` raises RuntimeError as in TF, where Python would otherwise
    rebind the name to a tensor and leave the variable silently unchanged."""
    v = gc.Variable(1.0)
    assert v.assign(2.0).assign_add(3.0).assign_sub(1.0) is v and float(v) == 4.0
    assert v.assign(5.0, read_value=False) is None and float(v) == 5.0
    assert v.assign_add(1.0, read_value=False) is None and float(v) == 6.0
    for stmt, fix in (("w += 1.0", "assign_add"), ("w -= 1.0", "assign_sub"),
                      ("w *= 2.0", r"assign\(variable \*"), ("w /= 2.0", r"assign\(variable /")):
        with pytest.raises(RuntimeError, match=fix):
            exec(stmt, {"w": v})
    assert float(v) == 6.0

    @gc.function
    def bump(var):
        var += 1.0
        return var
    with pytest.raises(RuntimeError, match=r"variable \+= value.*assign_add"):
        bump(v)
    assert float(v) == 6.0


def test_variable_names_are_tfs():
    """TF 2.21: name "w" reads back as "w:0", an unnamed variable as "Variable:0"."""
    assert gc.Variable(1.0, name="w").name == "w:0"
    assert gc.Variable(1.0).name == "Variable:0"
    assert gc.Variable(1.0, name="a/b").name == "a/b:0"
    assert repr(gc.Variable(1.0, name="w")).startswith("<gc.Variable 'w:0' shape=()")


def test_module_name_scope_prefixes_variable_names_as_tf():
    """tf.Module.name_scope: variables made inside are named 'module/...:0', nested scopes
    join; non_trainable_variables as TF's (names are TF 2.21's for this program)."""
    class Inner(gc.Module):
        def __init__(self):
            super().__init__(name="mm")
            self.w = gc.Variable(1.0, name="w")
            with self.name_scope:
                self.v = gc.Variable(1.0, name="v")
                self.u = gc.Variable(1.0, trainable=False)

    class Outer(gc.Module):
        def __init__(self):
            super().__init__(name="outer")
            with self.name_scope:
                self.inner = Inner()
                self.x = gc.Variable(2.0, name="x")
    m = Outer()
    assert m.name_scope.name == "outer/"
    assert [v.name for v in m.variables] == ["outer/x:0", "outer/mm/Variable:0",
                                             "outer/mm/v:0", "outer/w:0"]
    assert [v.name for v in m.non_trainable_variables] == ["outer/mm/Variable:0"]
    assert gc.Variable(1.0, name="after").name == "after:0"     # the scopes are left
