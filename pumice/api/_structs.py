"""Shared bases and codecs of the typed CRD models (:mod:`pumice.api.ray.types`,
:mod:`pumice.api.volcano.types`).

:class:`Wire` is the base of nested structs (keyword-only, camelCase wire names, defaults and
Nones omitted); :class:`TopLevel` adds ``apiVersion``/``kind``/``metadata`` and fills the first two
in from ``__api_version__``/``__kind__`` (the class name when empty) so they always encode.
"""

from __future__ import annotations

from typing import Any

import msgspec
from lightkube.models.meta_v1 import ObjectMeta


class Wire(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of every nested struct: keyword-only, camelCase on the wire, defaults omitted."""


class TopLevel(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Base of the top-level kinds; ``apiVersion``/``kind`` are filled in so they always encode.

    Subclasses set ``__api_version__`` (e.g. ``"ray.io/v1"``) and may set ``__kind__``.
    """

    api_version: str | None = None
    kind: str | None = None
    metadata: ObjectMeta | None = None

    __api_version__ = ""
    __kind__ = ""

    def __post_init__(self) -> None:
        if self.api_version is None:
            self.api_version = self.__api_version__
        if self.kind is None:
            self.kind = self.__kind__ or type(self).__name__


def to_wire(obj: msgspec.Struct) -> dict[str, Any]:
    """Encode a model to its wire dict (camelCase keys, defaults and Nones omitted).

    Raises:
        TypeError: when ``obj`` holds a value msgspec cannot encode, or does not encode to an object.
    """
    out = msgspec.to_builtins(obj)
    if not isinstance(out, dict):
        raise TypeError(f"{type(obj).__name__} does not encode to an object")
    return out


def from_wire(obj: dict[str, Any], cls: type[Any]) -> Any:
    """Decode a wire dict into ``cls`` (unknown fields ignored).

    Raises:
        msgspec.ValidationError: when a field has the wrong type or a required field is missing.
    """
    return msgspec.convert(obj, cls)
