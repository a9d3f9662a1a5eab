__version__ = "0.1.0"
# The one hand-written file of bcl/ (nbdev_export only updates the version line above): the front door of
# nbs/73_api.ipynb, imported lazily so that `import bcl` loads neither JAX nor the data. The subpackages (bcl.vi,
# bcl.data, bcl.engine, bcl.methods, bcl.figure, bcl.table) are imported on first use, e.g. `bcl.vi.svi`.
__all__ = ["load_sequence", "method", "train", "summarise"]

# jaxlib releases whose XLA:CPU hands some multiply-reduce fusions to YNNPACK, which returns wrong sums past 32,768
# rows (jax-ml/jax#39103) or crashes the process (jax-ml/jax#39257, e.g. S-FSVI on the MNIST CNN with 5 seeds).
YNN_FUSION_DEFECT = ("0.10.2", "0.11.0")
YNN_FUSION_OFF = "--xla_cpu_experimental_ynn_fusion_type="  # an empty list: no YNN fusion
# jaxlib releases whose XLA:CPU runs two batched LAPACK calls side by side, each splitting its batch over the intra-op
# thread pool and waiting for it (jax::ParallelBatchMap): on 2 cores both wait for ever. Seen as SFR's end of task with
# 5 seeds (a batched QR beside a batched triangular solve) and FROMP's: every thread asleep, no CPU used. Turning the
# concurrency-optimised scheduler off orders them one after the other; the numbers are the same, bit for bit.
CONCURRENT_LAPACK_DEFECT = ("0.10.2",)
CONCURRENT_LAPACK_OFF = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
CPU_WORKAROUNDS = ((YNN_FUSION_OFF, YNN_FUSION_DEFECT, "jax-ml/jax#39103"),
                   (CONCURRENT_LAPACK_OFF, CONCURRENT_LAPACK_DEFECT, "batched LAPACK calls that wait for each other"))


def _turn_off_defective_cpu_fusions() -> None:
    """Add each flag of `CPU_WORKAROUNDS` to XLA_FLAGS under a jaxlib it names, before JAX starts a backend (it reads
    the flags then), unless XLA_FLAGS already sets that option; warn if a backend is already running."""
    import os
    import sys
    from importlib.metadata import PackageNotFoundError, version
    try:
        release = version("jaxlib")
    except PackageNotFoundError:
        return
    for flag, releases, why in CPU_WORKAROUNDS:
        flags = os.environ.get("XLA_FLAGS", "")
        if release not in releases or flag.split("=")[0].lstrip("-") in flags:
            continue
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
        bridge = sys.modules.get("jax._src.xla_bridge")
        if bridge is not None and getattr(bridge, "_backends", None):
            import warnings
            warnings.warn(f"JAX started before bcl was imported, so XLA_FLAGS={flag!r} (a workaround for jaxlib "
                          f"{release}'s CPU backend: {why}) does not apply; import bcl before using JAX, or set it in "
                          "XLA_FLAGS yourself.", stacklevel=3)


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
