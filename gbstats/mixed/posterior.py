"""Reading posterior draws out of an ArviZ InferenceData."""
from __future__ import annotations

import numpy as np

from gbstats.errors import GbstatsError


def posterior_draws(idata, variable: str) -> np.ndarray:
    """Flattened draws (chain by chain) of a one-column posterior variable, e.g. bambi's
    'stereotype:alpha'. Raises naming the variables there are, or the column count found."""
    if variable not in idata.posterior:
        raise GbstatsError(f"posterior has no variable {variable!r}; it has "
                           f"{sorted(idata.posterior.data_vars)}")
    values = idata.posterior[variable].values
    flat = values.reshape(values.shape[0] * values.shape[1], -1)
    if flat.shape[1] != 1:
        raise GbstatsError(f"posterior variable {variable!r} has {flat.shape[1]} columns, "
                           "expected one")
    return flat[:, 0]
