"""The package version, in a module of its own so that any module can record it (checkpoints,
records) without importing the package face, which imports everything."""
__version__ = "0.1.0"
