"""sharesim: scenarios."""
