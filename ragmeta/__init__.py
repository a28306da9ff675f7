"""ragmeta's Python client: ``from ragmeta import Client``. The code lives in app.sdk (beside the service
whose schemas it reads); this package is its public name."""

from app.sdk import *  # noqa: F403
from app.sdk import __all__ as __all__
