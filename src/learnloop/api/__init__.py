"""The HTTP contracts as plain Python façades over the engine."""

from learnloop._http import ApiResponse
from learnloop.api.v2 import V2Api

__all__ = ["ApiResponse", "V2Api"]
