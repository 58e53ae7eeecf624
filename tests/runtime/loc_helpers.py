"""Finding the line a test marks with `# <marker>`, and checking errors that name it."""


def marker_line(path, marker):
    """The line number in `path` of the line ending with `# <marker>`."""
    with open(path) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}"):
                return i
    raise AssertionError(marker)


def check_located(err, path, marker, function, op=None):
    """`err` (an exception or pytest's ExceptionInfo) ends with `at path:line in function`
    for the line marked `# marker`, names `path` once, and chains its cause."""
    exc = getattr(err, "value", err)
    msg = str(exc)
    assert msg.endswith(f"at {path}:{marker_line(path, marker)} in {function}"), msg
    assert msg.count(path) == 1, msg
    assert exc.__cause__ is not None, "the original exception is not chained"
    if op is not None:
        assert f"op {op} '" in msg, msg
    return msg
