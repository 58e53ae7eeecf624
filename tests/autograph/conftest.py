import pytest


def pytest_collection_modifyitems(items):
    # a function silently falling back to unconverted code is a converter bug here
    for item in items:
        if "tests/autograph" in str(item.fspath):
            item.add_marker(pytest.mark.filterwarnings(
                "error::graphc.autograph.AutoGraphWarning"))
