"""Small builders for the gast nodes the converters generate."""
import gast


def load(name):
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def store(name):
    return gast.Name(id=name, ctx=gast.Store(), annotation=None, type_comment=None)


def param(name):
    return gast.Name(id=name, ctx=gast.Param(), annotation=None, type_comment=None)


def const(value):
    return gast.Constant(value=value, kind=None)


def ag(attr):
    """`ag__.attr`: an operator of the AutoGraph runtime."""
    return gast.Attribute(value=load("ag__"), attr=attr, ctx=gast.Load())


def call(func, args=(), keywords=()):
    if isinstance(func, str):
        func = load(func)
    return gast.Call(func=func, args=list(args), keywords=list(keywords))


def ag_call(attr, *args, **keywords):
    return call(ag(attr), args, [gast.keyword(arg=k, value=v) for k, v in keywords.items()])


def tuple_load(names):
    return gast.Tuple(elts=[load(n) for n in names], ctx=gast.Load())


def str_tuple(names):
    return gast.Tuple(elts=[const(n) for n in names], ctx=gast.Load())


def expr_tuple(exprs):
    return gast.Tuple(elts=list(exprs), ctx=gast.Load())


def assign(names, value):
    """`a = value`, `a, b = value`, or the bare expression statement when `names` is empty."""
    if not names:
        return gast.Expr(value=value)
    if len(names) == 1:
        target = store(names[0])
    else:
        target = gast.Tuple(elts=[store(n) for n in names], ctx=gast.Store())
    return gast.Assign(targets=[target], value=value, type_comment=None)


def assign_value(name, value):
    return gast.Assign(targets=[store(name)], value=value, type_comment=None)


def returns(names):
    """`return a` / `return a, b` / nothing for no names."""
    if not names:
        return []
    if len(names) == 1:
        return [gast.Return(value=load(names[0]))]
    return [gast.Return(value=tuple_load(names))]


def arguments(params):
    return gast.arguments(args=[param(p) for p in params], posonlyargs=[], vararg=None,
                          kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])


def function(name, params, body):
    return gast.FunctionDef(name=name, args=arguments(params), body=list(body) or [gast.Pass()],
                            decorator_list=[], returns=None, type_comment=None, type_params=[])


def thunk(expr):
    """`lambda: expr`, called at once by the operator it is passed to (never kept: its
    reads happen where it is written, not later as a closure's would)."""
    node = gast.Lambda(args=arguments([]), body=expr)
    node.ag_thunk = True
    return node


def check_lazy_operand(expr, where):
    """A thunked operand cannot hold `name := value`: inside the lambda it would bind a
    local of the lambda, not the user's variable. Refuse the conversion instead."""
    for sub in gast.walk(expr):
        if isinstance(sub, gast.NamedExpr):
            raise SyntaxError(
                f"line {getattr(sub, 'lineno', '?')}: an assignment expression (:=) in an "
                f"operand of {where} that may not run cannot be converted; assign it in a "
                "statement before")


def copy_location(new, old):
    """Give `new` and every node under it without a position the first line of `old`
    (a one-line span: Python reports a call at its end line, which must be the same)."""
    line, col = getattr(old, "lineno", None), getattr(old, "col_offset", None)
    end_col = getattr(old, "end_col_offset", None)
    if getattr(old, "end_lineno", None) != line:
        end_col = col
    for n in gast.walk(new):
        if "lineno" in n._attributes and getattr(n, "lineno", None) is None:
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = line, col, line, end_col
    return new
