"""Tables that ship inside installed packages, so the demo needs no network.

Only two packages are known and their loaders are looked up by name in a fixed place, so
the catalog cannot make us import arbitrary modules. A loader that fails raises with the
dataset's name: a bundled dataset is never skipped silently.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from verilearn_assets.core.ingest.catalog import BundledDataset, safe_table_name


class BundledDatasetError(RuntimeError):
    """A bundled dataset could not be loaded; the message names it."""


# scikit-learn's small tables that ship inside the wheel (the others download on demand).
SKLEARN_LOADERS = ("iris", "wine", "breast_cancer", "diabetes", "linnerud")
# scikit-learn classification targets that read better as their class names.
_SKLEARN_NAMED_TARGETS = ("iris", "wine", "breast_cancer")


@functools.cache
def statsmodels_loaders() -> tuple[str, ...]:
    """Every dataset package under `statsmodels.datasets` that has `load_pandas`."""
    import statsmodels.datasets as smd

    names = []
    for info in pkgutil.iter_modules(smd.__path__):
        if not info.ispkg or info.name.startswith("_") or info.name == "tests":
            continue
        module = importlib.import_module(f"statsmodels.datasets.{info.name}")
        if callable(getattr(module, "load_pandas", None)):
            names.append(info.name)
    return tuple(sorted(names))


def available_loaders(package: str) -> tuple[str, ...]:
    if package == "statsmodels":
        return statsmodels_loaders()
    if package == "sklearn":
        return SKLEARN_LOADERS
    raise BundledDatasetError(f"unknown package {package!r} (known: statsmodels, sklearn)")


def _index_as_column(frame: pd.DataFrame) -> pd.DataFrame:
    """Keep a meaningful index (dates, place names) as a column; drop a plain row number."""
    if isinstance(frame.index, pd.RangeIndex) and frame.index.name is None:
        return frame.reset_index(drop=True)
    name = frame.index.name or ("date" if isinstance(frame.index, pd.DatetimeIndex) else "index")
    if name in frame.columns:
        name = f"{name}_index"
    return frame.rename_axis(name).reset_index()


def _statsmodels_tables(loader: str) -> dict[str, pd.DataFrame]:
    module = importlib.import_module(f"statsmodels.datasets.{loader}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        data = module.load_pandas().data
    if isinstance(data, pd.Series):
        data = data.to_frame()
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"load_pandas().data is a {type(data).__name__}, not a DataFrame")
    return {loader: _index_as_column(data)}


def _sklearn_tables(loader: str) -> dict[str, pd.DataFrame]:
    import sklearn.datasets as skd

    if loader == "linnerud":
        bunch = skd.load_linnerud(as_frame=True)
        return {
            "exercise": bunch.data.reset_index(drop=True),
            "physiological": bunch.target.reset_index(drop=True),
        }
    kwargs = {"scaled": False} if loader == "diabetes" else {}
    bunch = getattr(skd, f"load_{loader}")(as_frame=True, **kwargs)
    frame = bunch.frame.reset_index(drop=True)
    if loader in _SKLEARN_NAMED_TARGETS:
        names = list(bunch.target_names)
        frame["target"] = [str(names[int(code)]) for code in frame["target"]]
    return {loader: frame}


_PACKAGES: dict[str, Callable[[str], dict[str, pd.DataFrame]]] = {
    "statsmodels": _statsmodels_tables,
    "sklearn": _sklearn_tables,
}


def load_bundled(entry: BundledDataset) -> dict[str, pd.DataFrame]:
    """The dataset's tables by table name; raises with the dataset's name on any failure."""
    where = f"bundled dataset {entry.name!r} ({entry.package}.{entry.loader})"
    if entry.loader not in available_loaders(entry.package):
        raise BundledDatasetError(
            f"{where}: no such loader in {entry.package} (known: "
            f"{', '.join(available_loaders(entry.package))})"
        )
    try:
        tables = _PACKAGES[entry.package](entry.loader)
    except Exception as exc:  # re-raised with the dataset named
        raise BundledDatasetError(f"{where}: failed to load: {type(exc).__name__}: {exc}") from exc
    for table, frame in tables.items():
        if frame.empty:
            raise BundledDatasetError(f"{where}: table {table!r} is empty")
    return {safe_table_name(name): frame for name, frame in tables.items()}


def integral_floats_as_ints(frame: pd.DataFrame) -> pd.DataFrame:
    """Float columns holding only whole numbers become integers (lossless).

    Packages store counts and years as floats for their model APIs; as a data-analysis
    table they read better as integers ("1947", not "1947.0").
    """
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if not pd.api.types.is_float_dtype(column):
            continue
        present = column.dropna()
        if present.empty or not np.isfinite(present).all() or (present % 1 != 0).any():
            continue
        if present.abs().max() >= 2**53:  # beyond exact float integers: leave as is
            continue
        out[name] = column.astype("Int64" if column.isna().any() else "int64")
    return out


def export_bundled(entry: BundledDataset, directory: Path) -> list[Path]:
    """Write each table as `<directory>/<table>.csv`: plain text, so its bytes hash stably."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for table, frame in load_bundled(entry).items():
        path = directory / f"{table}.csv"
        integral_floats_as_ints(frame).to_csv(path, index=False, lineterminator="\n")
        paths.append(path)
    return paths
