"""pandas is optional: inputs are recognised as pandas objects only if pandas is already
imported (so importing privset never imports it), and frames are built only on request."""

from __future__ import annotations

import sys
from typing import Any


def is_frame(obj: Any) -> bool:
    """True for a pandas DataFrame."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.DataFrame)


def is_series(obj: Any) -> bool:
    """True for a pandas Series."""
    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(obj, pd.Series)


def pandas() -> Any:
    """The pandas module, or an ImportError saying how to get it."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(
            "data frames of results need pandas: pip install pandas (or pip install privset[pandas])"
        ) from e
    return pd
