"""sharesim: reports."""
