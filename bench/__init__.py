"""Benchmarks of sharesim's hot paths (`nox -s bench`). Each module has a main() that prints its figures."""
