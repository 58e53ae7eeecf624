"""Fresh, short, stable names for generated code (`if_true`, `if_true_1`, `break_`...)."""
import gast


class Namer:
    """Hands out names unused in a function, numbered in the order they are requested."""

    def __init__(self, tree):
        self.used = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}
        self.used |= {n.name for n in gast.walk(tree) if isinstance(n, gast.FunctionDef)}
        self.used.add("ag__")

    def new(self, base):
        name, i = base, 0
        while name in self.used:
            i += 1
            name = f"{base}_{i}" if not base.endswith("_") else f"{base}{i}"
        self.used.add(name)
        return name
