__version__ = "0.1.0"
# The one hand-written file of bcl/ (nbdev_export only updates the version line above): the front door of
# nbs/73_api.ipynb, imported lazily so that `import bcl` loads neither JAX nor the data. The subpackages (bcl.vi,
# bcl.data, bcl.engine, bcl.methods, bcl.figure, bcl.table) are imported on first use, e.g. `bcl.vi.svi`.
__all__ = ["load_sequence", "method", "train", "summarise"]

# jaxlib releases whose XLA:CPU hands some multiply-reduce fusions to YNNPACK, which returns wrong sums past 32,768
# rows (jax-ml/jax#39103) or crashes the process (jax-ml/jax#39257, e.g. S-FSVI on the MNIST CNN with 5 seeds).
YNN_FUSION_DEFECT = ("0.10.2", "0.11.0")
YNN_FUSION_OFF = "--xla_cpu_experimental_ynn_fusion_type="  # an empty list: no YNN fusion


def _turn_off_defective_cpu_fusions() -> None:
    """Add `YNN_FUSION_OFF` to XLA_FLAGS under an affected jaxlib, before JAX starts a backend (it reads the flags
    then), unless XLA_FLAGS already chooses YNN fusions; warn if a backend is already running."""
    import os
    import sys
    from importlib.metadata import PackageNotFoundError, version
    try:
        if version("jaxlib") not in YNN_FUSION_DEFECT:
            return
    except PackageNotFoundError:
        return
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_experimental_ynn_fusion_type" in flags:
        return
    os.environ["XLA_FLAGS"] = f"{flags} {YNN_FUSION_OFF}".strip()
    bridge = sys.modules.get("jax._src.xla_bridge")
    if bridge is not None and getattr(bridge, "_backends", None):
        import warnings
        warnings.warn(f"JAX started before bcl was imported, so XLA_FLAGS={YNN_FUSION_OFF!r} (a workaround for "
                      f"jaxlib {version('jaxlib')}'s CPU reductions, jax-ml/jax#39103) does not apply; import bcl "
                      "before using JAX, or set it in XLA_FLAGS yourself.", stacklevel=3)


_turn_off_defective_cpu_fusions()


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
