__version__ = "0.1.0"
# The one hand-written file of bcl/ (nbdev_export only updates the version line above): the front door of
# nbs/17_api.ipynb, imported lazily so that `import bcl` loads neither JAX nor the data. `bcl.train` is the engine's
# module, made callable there (nbs/07_train.ipynb): `bcl.train(recipe, sequence, seeds)` is `bcl.api.train`.
__all__ = ["load_sequence", "method", "train", "summarise"]


def __getattr__(name):
    if name == "train":
        import importlib
        return importlib.import_module("bcl.train")
    if name in __all__:
        from bcl import api
        return getattr(api, name)
    import importlib
    try:  # any submodule, e.g. bcl.loggers.CSVLogger after a bare `import bcl`
        return importlib.import_module(f"bcl.{name}")
    except ModuleNotFoundError:
        raise AttributeError(f"module 'bcl' has no attribute {name!r}") from None


def __dir__():
    return sorted(list(globals()) + __all__)
