"""Completion indexes of Indexed Jobs: the interval lists of ``status.completedIndexes`` /
``status.failedIndexes``, the per-index Pod template, index failure counts and successPolicy.

Index lists are kept as ordered, non-overlapping, non-adjacent ``(first, last)`` intervals
(``Intervals``, inclusive bounds) and written in upstream's compressed form: ``"0-2,5"``, two
adjacent indexes as ``"3,4"``.

Mirrors: kubernetes pkg/controller/job/indexed_job_utils.go (orderedIntervals, parseIndexesFromString,
firstPendingIndexes, appendDuplicatedIndexPodsForRemoval, addCompletionIndexEnvVariables,
podGenerateNameWithIndex, getNewIndexFailureCounts, getPodsWithDelayedDeletionPerIndex),
success_policy.go (matchSuccessPolicy, matchSucceededIndexesRule) and backoff_utils.go
(getRemainingTimePerIndex) at v1.32.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Sequence

from pumice._util.gostrings import atoi
from pumice.api import Obj

log = logging.getLogger(__name__)

#: the Pod annotation and label carrying the index (batch/v1 JobCompletionIndexAnnotation)
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
#: failures counted so far in the Pod's index (JobIndexFailureCountAnnotation)
INDEX_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-failure-count"
#: failures a podFailurePolicy Ignore rule matched so far in the index (JobIndexIgnoredFailureCountAnnotation)
INDEX_IGNORED_FAILURE_COUNT_ANNOTATION = "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
#: apiserver names.MaxGeneratedNameLength (63 minus the 5 random characters)
MAX_GENERATED_NAME_LENGTH = 58
INT32_MAX = 2**31 - 1

REASON_SUCCESS_POLICY = "SuccessPolicy"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"

Intervals = list[tuple[int, int]]


def is_indexed(job: Obj) -> bool:
    """``spec.completionMode`` is ``Indexed`` (isIndexedJob)."""
    return (job.get("spec") or {}).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: Obj) -> bool:
    """``spec.backoffLimitPerIndex`` is set (hasBackoffLimitPerIndex; the gate is on by default in 1.32)."""
    return (job.get("spec") or {}).get("backoffLimitPerIndex") is not None


def completion_index(pod: Obj) -> int | None:
    """The Pod's index from its annotation, or None when missing, not an integer or negative
    (getCompletionIndex)."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    if raw is None:
        return None
    try:
        ix = int(str(raw), 10)
    except ValueError:
        return None
    return ix if ix >= 0 else None


def _atoi(s: str) -> int | None:
    """Go strconv.Atoi (:func:`pumice._util.gostrings.atoi`), None where it errs."""
    try:
        return atoi(s)
    except ValueError:
        return None


def parse_indexes(text: str | None, completions: int) -> Intervals:
    """Intervals of a compressed index list, as the controller reads it (parseIndexesFromString):
    a fragment that is not a number is skipped (logged), the list stops at the first index
    ``>= completions``, a last bound past it is clipped, and touching intervals are merged. The
    format itself is checked by API validation."""
    out: Intervals = []
    if not text:
        return out
    for frag in text.split(","):
        limits = frag.split("-")
        first = _atoi(limits[0])
        if first is None:
            log.info("Corrupted indexes interval, ignoring: %r", frag)
            continue
        if first >= completions:
            break
        last = first
        if len(limits) > 1:
            parsed = _atoi(limits[1])
            if parsed is None:
                log.info("Corrupted indexes interval, ignoring: %r", frag)
                continue
            last = min(parsed, completions - 1)
        if out and out[-1][1] == first - 1:
            out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def merge(a: Intervals, b: Intervals) -> Intervals:
    """The union of two interval lists, ordered, with overlapping or touching intervals joined."""
    out: Intervals = []
    for first, last in sorted([*a, *b]):
        if out and first <= out[-1][1] + 1:
            if last > out[-1][1]:
                out[-1] = (out[-1][0], last)
        else:
            out.append((first, last))
    return out


def with_indexes(a: Intervals, indexes: Iterable[int]) -> Intervals:
    """``a`` plus the given single indexes (withOrderedIndexes)."""
    return merge(a, [(i, i) for i in sorted(set(indexes))])


def total(a: Intervals) -> int:
    """How many indexes the intervals hold."""
    return sum(last - first + 1 for first, last in a)


def has(a: Intervals, ix: int) -> bool:
    """Whether ``ix`` is in one of the intervals."""
    return any(first <= ix <= last for first, last in a)


def format_indexes(a: Intervals) -> str:
    """The compressed form: ``"0-2,5"``; an interval of two indexes is written ``"3,4"``."""
    parts = []
    for first, last in a:
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts.append(f"{first},{last}")
        else:
            parts.append(f"{first}-{last}")
    return ",".join(parts)


def first_pending_indexes(count: int, completions: int, non_pending: Intervals) -> list[int]:
    """The ``count`` lowest indexes below ``completions`` not in ``non_pending`` (the succeeded,
    failed and active indexes) (firstPendingIndexes)."""
    out: list[int] = []
    candidate = 0
    for first, last in [*non_pending, (completions, completions)]:
        while candidate < min(first, completions) and len(out) < count:
            out.append(candidate)
            candidate += 1
        candidate = max(candidate, last + 1)
        if len(out) >= count or candidate >= completions:
            break
    return out


def duplicated_index_pods(active: Sequence[Obj], completions: int, keep_order: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``(remove, keep)``: active Pods without a valid index (missing, or ``>= completions``) and
    all but one Pod of each repeated index go to ``remove``; the Pod kept for an index is the
    one that ``keep_order`` (the deletion order, first deleted first) puts last
    (appendDuplicatedIndexPodsForRemoval)."""
    rank = {id(p): i for i, p in enumerate(keep_order)}
    by_index: dict[int, list[Obj]] = {}
    remove: list[Obj] = []
    for p in active:
        ix = completion_index(p)
        if ix is None or ix >= completions:
            remove.append(p)
        else:
            by_index.setdefault(ix, []).append(p)
    keep: list[Obj] = []
    for ix in sorted(by_index):
        group = sorted(by_index[ix], key=lambda p: rank.get(id(p), -1))
        remove.extend(group[:-1])
        keep.append(group[-1])
    return remove, keep


def generate_name_with_index(job_name: str, index: int) -> str:
    """``<job>-<index>-``, the job name cut so the prefix fits MaxGeneratedNameLength
    (podGenerateNameWithIndex)."""
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > MAX_GENERATED_NAME_LENGTH:
        prefix = prefix[: MAX_GENERATED_NAME_LENGTH - len(suffix)] + suffix
    return prefix


def _add_index_env(container: Obj) -> None:
    env = container.setdefault("env", [])
    if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
        return
    env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
        "fieldPath": f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"}}})


def index_template(job: Obj, index: int, failure_counts: tuple[int, int] | None = None) -> Obj:
    """The Job's Pod template for one index (pure): the index annotation and label, hostname
    ``<job>-<index>``, and in every container and init container without one an env var
    ``JOB_COMPLETION_INDEX`` read from the label by the downward API (PodIndexLabel is GA in
    1.32). ``failure_counts`` (backoffLimitPerIndex only): the ``(failed, ignored)`` counts
    of the index, written as the index-failure-count annotations (the ignored one only when > 0).

    Mirrors: manageJob's per-index template (addCompletionIndexEnvVariables,
    addCompletionIndexAnnotation, addCompletionIndexLabel, addIndexFailureCountAnnotation).
    """
    spec = job.get("spec") or {}
    template = copy.deepcopy(spec.get("template") or {})
    pod_spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for c in pod_spec.get(key) or []:
            _add_index_env(c)
    tmd = template.setdefault("metadata", {})
    tmd.setdefault("annotations", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
    tmd.setdefault("labels", {})[COMPLETION_INDEX_ANNOTATION] = str(index)
    pod_spec["hostname"] = f"{job['metadata']['name']}-{index}"
    if failure_counts is not None:
        failed, ignored = failure_counts
        tmd["annotations"][INDEX_FAILURE_COUNT_ANNOTATION] = str(failed)
        if ignored > 0:
            tmd["annotations"][INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
    return template


def _count_annotation(pod: Obj, key: str) -> int:
    """An index failure count annotation; 0 when missing, not a number, negative or past int32."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    if raw is None:
        return 0
    value = _atoi(str(raw))
    if value is None or value < 0 or value > INT32_MAX:
        log.info("pod %s: annotation %s=%r is not a valid count, using 0",
                 (pod.get("metadata") or {}).get("name"), key, raw)
        return 0
    return value


def index_failure_count(pod: Obj) -> int:
    """The Pod's ``job-index-failure-count`` (getIndexFailureCount)."""
    return _count_annotation(pod, INDEX_FAILURE_COUNT_ANNOTATION)


def index_absolute_failure_count(pod: Obj) -> int:
    """Counted plus ignored failures of the Pod's index (getIndexAbsoluteFailureCount)."""
    return index_failure_count(pod) + _count_annotation(pod, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)


def new_index_failure_counts(replaced: Obj | None, counted: bool) -> tuple[int, int]:
    """``(failed, ignored)`` counts for the Pod replacing ``replaced`` in its index: the replaced
    Pod's counts plus its own failure, as counted or (a podFailurePolicy Ignore) as ignored;
    ``(0, 0)`` for the first Pod of an index (getNewIndexFailureCounts)."""
    if replaced is None:
        return 0, 0
    failed = index_failure_count(replaced)
    ignored = _count_annotation(replaced, INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)
    return (failed + 1, ignored) if counted else (failed, ignored + 1)


def remaining_backoff(base: float, cap: float, failures: int, last_failure: float, now: float) -> float:
    """Seconds until a replacement may start: ``base * 2**(failures-1)`` (at most ``cap``) after
    the last failure, 0 without failures (getRemainingTimeForFailuresCount)."""
    if failures <= 0:
        return 0.0
    delay = base
    for _ in range(1, failures):
        delay *= 2
        if delay >= cap:
            delay = cap
            break
    return max(0.0, delay - (now - last_failure))


def _match_indexes_rule(rule: Intervals, succeeded: Intervals, count: int | None) -> bool:
    """All of the rule's indexes succeeded, or at least ``count`` of them (matchSucceededIndexesRule)."""
    contains = 0
    for rf, rl in rule:
        for sf, sl in succeeded:
            overlap = min(rl, sl) - max(rf, sf) + 1
            if overlap > 0:
                contains += overlap
    return contains == total(rule) or (count is not None and contains >= count)


def match_success_policy(policy: Obj | None, completions: int, succeeded: Intervals) -> str | None:
    """The ``SuccessCriteriaMet`` message ("Matched rules at index N") of the first successPolicy
    rule the succeeded indexes meet, or None (matchSuccessPolicy). A rule whose succeededIndexes
    hold no index below ``completions`` is skipped; a rule with only succeededCount needs that
    many succeeded indexes in all."""
    if not policy or not succeeded:
        return None
    for i, rule in enumerate(policy.get("rules") or []):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            if not required:
                continue
            if _match_indexes_rule(required, succeeded, None if count is None else int(count)):
                return f"Matched rules at index {i}"
        elif count is not None and total(succeeded) >= int(count):
            return f"Matched rules at index {i}"
    return None
