"""The privgp command line (thin: parses, calls the library, writes, prints). Entry point:
:func:`privgp.cli.main.main`; one module per command."""
__all__: list[str] = []
