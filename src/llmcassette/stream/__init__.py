"""Stream-faithful interception of httpx and httpx2: pass-through recording, paced replay."""

from .pace import Pace
from .transport import REPLACED_PATCHERS, is_ours, patches

__all__ = ["REPLACED_PATCHERS", "Pace", "is_ours", "patches"]
