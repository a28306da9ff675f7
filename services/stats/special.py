"""scipy.special's functions for the statistics, loaded on first use (``special.ndtri(p)``).

The API process imports the statistics (its routers name their types) but computes none: reports run in
the report processes, which load scipy.special as they warm up. Importing scipy.special took about 0.2 s of
the API's start, which ``/healthz`` waits for (it rewrites the docstrings of its functions as it loads).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import scipy.special

    return getattr(scipy.special, name)
