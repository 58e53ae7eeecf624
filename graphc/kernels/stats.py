"""How often compiled code actually ran: fused-group kernels and natively compiled loops.

Counted at the call sites that enter numba-compiled code (never on the numpy paths), so a
test can assert that a "numba agrees" check really ran a kernel and not the numpy rules.
An integer increment per kernel call: nothing next to the kernel's own work.
"""


class Counts:
    __slots__ = ("kernel_calls", "loop_calls")

    def __init__(self):
        self.kernel_calls = 0   # fused group kernels entered
        self.loop_calls = 0     # natively compiled while/cond loops entered

    def snapshot(self):
        return (self.kernel_calls, self.loop_calls)

    def __repr__(self):
        return f"<compiled code runs: {self.kernel_calls} kernels, {self.loop_calls} loops>"


COUNTS = Counts()
