import os

# Every trace in the test suite is checked by verify(graph).
os.environ.setdefault("GRAPHC_VERIFY", "1")
