"""The system under study: pure protocol state machines (model.core) and the SimPy actors that drive them."""
