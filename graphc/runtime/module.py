"""gc.Module: a container that finds its variables and submodules by walking its attributes."""
import re

from .variables import Variable

# Restore-on-creation (gc.train.Checkpoint): while a restore holds values for objects that do
# not exist yet, it listens here; Modules call the listeners after a trackable attribute is
# set, and optimizers after they create slots or their iteration counter.
_creation_listeners = []


def notify_tracked_change():
    """Let pending restores look for objects that have just joined the object graph."""
    for listener in list(_creation_listeners):
        listener()


class Module:
    """Base class for models. `.variables`, `.trainable_variables` and `.submodules` are found
    by walking attributes (and lists, tuples, dicts inside them) in a stable order: attributes
    sorted by name, containers in their own order (dicts by sorted key)."""

    def __init__(self, name=None):
        if name is not None and not re.fullmatch(r"[A-Za-z_][\w.]*", name):
            raise ValueError(f"Module name {name!r} is not a valid identifier")
        self._name = name or _snake(type(self).__name__)

    @property
    def name(self):
        return self._name

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if _creation_listeners and _may_be_tracked(value):
            notify_tracked_change()

    @property
    def variables(self):
        return tuple(self._walk(Variable))

    @property
    def trainable_variables(self):
        return tuple(v for v in self._walk(Variable) if v.trainable)

    @property
    def non_trainable_variables(self):
        return tuple(v for v in self._walk(Variable) if not v.trainable)

    @property
    def name_scope(self):
        """As tf.Module's: `with self.name_scope:` prefixes the names of Variables made
        inside with the module's name (`my_module/w:0`); `.name` is `"my_module/"`."""
        return NameScope(self._name + "/")

    @property
    def submodules(self):
        return tuple(self._walk(Module))

    def _walk(self, kind):
        seen, out = {id(self)}, []
        _flatten(self, kind, seen, out)
        return out

    def __repr__(self):
        return f"<{type(self).__name__} '{self._name}'>"


class NameScope:
    """A name prefix for the Variables made while it is entered (nested scopes join)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        from .variables import _name_scopes
        stack = _name_scopes()
        stack.append((stack[-1] if stack else "") + self.name)
        return self.name

    def __exit__(self, *exc):
        from .variables import _name_scopes
        _name_scopes().pop()


def _flatten(module, kind, seen, out):
    """As tf.Module: a module's own attributes first (sorted by name; dicts by key, lists
    in order), then each submodule found there, in that order, the same way."""
    subs = []
    for _, value in sorted(vars(module).items()):
        _collect(value, kind, seen, out, subs)
    for sub in subs:
        _flatten(sub, kind, seen, out)


def _collect(value, kind, seen, out, subs):
    if id(value) in seen:
        return
    if isinstance(value, (Module, Variable)):
        seen.add(id(value))
        if isinstance(value, kind):
            out.append(value)
        if isinstance(value, Module):
            subs.append(value)
    elif isinstance(value, dict):
        for k in sorted(value, key=repr):
            _collect(value[k], kind, seen, out, subs)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _collect(v, kind, seen, out, subs)


def _may_be_tracked(value):
    return (isinstance(value, (Variable, Module, list, tuple, dict))
            or hasattr(type(value), "_trackable_children"))


def _snake(name):
    """A class name as a module name, as tf.Module's camel_to_snake: acronyms stay one word
    (MLP -> mlp, HTTPServer -> http_server, MyModel -> my_model)."""
    return re.sub(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))", r"_\1", name).lower()
