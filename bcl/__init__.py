__version__ = "0.1.0"
# The one hand-written file of bcl/ (nbdev_export only updates the version line above): the front door of
# nbs/17_api.ipynb, imported lazily so that `import bcl` loads neither JAX nor the data.
__all__ = ["load_sequence", "method", "train", "summarise"]


def __getattr__(name):
    if name in __all__:
        from bcl import api
        return getattr(api, name)
    raise AttributeError(f"module 'bcl' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
