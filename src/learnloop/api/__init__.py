"""The HTTP contracts as plain Python façades over the engine."""

from learnloop._http import ApiResponse
from learnloop.api.v1 import V1Api, V1Limits
from learnloop.api.v2 import V2Api

__all__ = ["ApiResponse", "V1Api", "V1Limits", "V2Api"]
