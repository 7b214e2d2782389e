"""The privgp command line (thin: parses, calls the library, prints)."""
