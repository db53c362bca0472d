"""Event filters: which informer events may enqueue a Request.

A predicate has ``create(obj)``, ``update(old, new)`` and ``delete(obj)``, each returning True to
let the event through. Pass predicates to ``for_``/``owns``/``watches`` (all must pass) or to
``with_event_filter`` (applies to every watch of the controller). Any plain callable
``(old, new) -> bool`` is accepted and filters updates only (creates and deletes pass).

Mirrors: controller-runtime pkg/predicate/predicate.go.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pumice.api import Obj

UpdateFn = Callable[[Obj, Obj], bool]

__all__ = [
    "AnnotationChangedPredicate",
    "FuncPredicate",
    "GenerationChangedPredicate",
    "LabelChangedPredicate",
    "Predicate",
    "PredicateLike",
    "ResourceVersionChangedPredicate",
    "and_",
    "as_predicate",
    "not_",
    "or_",
]


def _md(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


class Predicate:
    """Base predicate: lets every event through. Override the methods you filter on."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True


PredicateLike = Predicate | type[Predicate] | UpdateFn


class GenerationChangedPredicate(Predicate):
    """Updates pass only when ``metadata.generation`` changed (spec changes, not status/metadata).

    Mirrors: controller-runtime predicate.GenerationChangedPredicate.
    """

    def update(self, old: Obj, new: Obj) -> bool:
        return _md(old).get("generation") != _md(new).get("generation")


class LabelChangedPredicate(Predicate):
    """Updates pass only when ``metadata.labels`` changed. Mirrors predicate.LabelChangedPredicate."""

    def update(self, old: Obj, new: Obj) -> bool:
        return (_md(old).get("labels") or {}) != (_md(new).get("labels") or {})


class AnnotationChangedPredicate(Predicate):
    """Updates pass only when ``metadata.annotations`` changed.

    Mirrors: controller-runtime predicate.AnnotationChangedPredicate.
    """

    def update(self, old: Obj, new: Obj) -> bool:
        return (_md(old).get("annotations") or {}) != (_md(new).get("annotations") or {})


class ResourceVersionChangedPredicate(Predicate):
    """Updates pass only when ``metadata.resourceVersion`` changed (drops resyncs).

    Mirrors: controller-runtime predicate.ResourceVersionChangedPredicate.
    """

    def update(self, old: Obj, new: Obj) -> bool:
        return _md(old).get("resourceVersion") != _md(new).get("resourceVersion")


class FuncPredicate(Predicate):
    """A predicate from functions; a missing function lets that event type through.

    Mirrors: controller-runtime predicate.Funcs.
    """

    def __init__(
        self,
        *,
        create: Callable[[Obj], bool] | None = None,
        update: UpdateFn | None = None,
        delete: Callable[[Obj], bool] | None = None,
    ) -> None:
        self._create, self._update, self._delete = create, update, delete

    def create(self, obj: Obj) -> bool:
        return self._create is None or self._create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return self._update is None or self._update(old, new)

    def delete(self, obj: Obj) -> bool:
        return self._delete is None or self._delete(obj)


def as_predicate(p: PredicateLike) -> Predicate:
    """Normalize a predicate instance, a predicate class, or an update callable.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(p, Predicate):
        return p
    if isinstance(p, type) and issubclass(p, Predicate):
        return p()
    if callable(p):
        return FuncPredicate(update=p)  # type: ignore[arg-type]
    raise TypeError(f"not a predicate: {p!r}")


class _Or(Predicate):
    def __init__(self, ps: list[Predicate]) -> None:
        self.ps = ps

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.ps)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.ps)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.ps)


class _And(_Or):
    def create(self, obj: Obj) -> bool:
        return all(p.create(obj) for p in self.ps)

    def update(self, old: Obj, new: Obj) -> bool:
        return all(p.update(old, new) for p in self.ps)

    def delete(self, obj: Obj) -> bool:
        return all(p.delete(obj) for p in self.ps)


class _Not(Predicate):
    def __init__(self, p: Predicate) -> None:
        self.p = p

    def create(self, obj: Obj) -> bool:
        return not self.p.create(obj)

    def update(self, old: Obj, new: Obj) -> bool:
        return not self.p.update(old, new)

    def delete(self, obj: Obj) -> bool:
        return not self.p.delete(obj)


def or_(*ps: PredicateLike) -> Predicate:
    """Passes when any passes (e.g. ``or_(GenerationChangedPredicate, LabelChangedPredicate)``)."""
    return _Or([as_predicate(p) for p in ps])


def and_(*ps: PredicateLike) -> Predicate:
    """Passes when all pass."""
    return _And([as_predicate(p) for p in ps])


def not_(p: PredicateLike) -> Predicate:
    """Negation."""
    return _Not(as_predicate(p))


def normalize(ps: Iterable[PredicateLike] | PredicateLike | None) -> list[Predicate]:
    """A list of predicates from None, one predicate-like, or an iterable of them."""
    if ps is None:
        return []
    if isinstance(ps, (Predicate, type)) or callable(ps):
        return [as_predicate(ps)]  # type: ignore[arg-type]
    return [as_predicate(p) for p in ps]
