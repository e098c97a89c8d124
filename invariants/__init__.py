"""sharesim: invariants."""
