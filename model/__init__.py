"""The system under study: pure protocol state machines (model.core) and the SimPy actors that drive them."""


def build() -> str:
    """``"compiled"`` when the simulator's modules are mypyc extensions (setup.py), else ``"interpreted"``."""
    from model.sim import network

    return "compiled" if not network.__file__.endswith(".py") else "interpreted"
