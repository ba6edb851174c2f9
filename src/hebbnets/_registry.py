"""``Registry``: names -> objects, filled by a decorator (protocols, statistics, figure kinds,
measurements). Registering another object under a taken name is an error; looking up an
unknown name is one ``ValueError`` naming the argument and the known names."""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A named collection of ``kind`` objects (e.g. ``Registry("protocol")``)."""

    def __init__(self, kind: str):
        self.kind = kind
        self.items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@registry.register("fit")`` adds the decorated object under ``name``."""

        def deco(obj: T) -> T:
            if not callable(obj):
                raise ValueError(f"{self.kind}: {name!r} must be callable")
            if name in self.items and self.items[name] is not obj:
                raise ValueError(f"name: {self.kind} {name!r} is already registered")
            self.items[name] = obj
            return obj

        return deco

    def get(self, name: str, argument: str | None = None) -> T:
        if name not in self.items:
            raise ValueError(f"{argument or self.kind}: unknown {self.kind} {name!r}; expected one of {self.names()}")
        return self.items[name]

    def names(self) -> list[str]:
        return sorted(self.items)

    def __contains__(self, name: Any) -> bool:
        return name in self.items
