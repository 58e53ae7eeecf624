"""Reverse-mode autodiff: the tape and GradientTape (`tape`), gradient rules of control
flow (`control`), of tensor lists (`lists`) and shared rule helpers (`ops`)."""
