"""Pure protocol state machines. Nothing here imports SimPy: time is an explicit ``now_ms``."""
