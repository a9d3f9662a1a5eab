__version__ = "0.1.0"
# The one hand-written file of bcl/ (nbdev_export only updates the version line above): the front door of
# nbs/73_api.ipynb, imported lazily so that `import bcl` loads neither JAX nor the data. The subpackages (bcl.vi,
# bcl.data, bcl.engine, bcl.methods, bcl.figure, bcl.table) are imported on first use, e.g. `bcl.vi.svi`.
__all__ = ["load_sequence", "method", "train", "summarise"]


def __getattr__(name):
    if name in __all__:
        from bcl import api
        return getattr(api, name)
    import importlib
    try:  # any submodule or subpackage, e.g. bcl.engine.loggers.CSVLogger after a bare `import bcl`
        return importlib.import_module(f"bcl.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'bcl' has no attribute {name!r}") from None


def __dir__():
    return sorted(list(globals()) + __all__)
