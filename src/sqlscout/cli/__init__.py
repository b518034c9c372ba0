"""The ``sqlscout`` command line (typer + rich)."""
