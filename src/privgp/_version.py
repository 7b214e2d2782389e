"""The single source of privgp's version (read by pyproject.toml and ``privgp --version``)."""
__version__ = "0.1.0"
