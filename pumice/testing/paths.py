"""Where the repository and the shared inputs (upstream samples, traces) are.

``shared_dir()`` is the ``shared`` folder beside the repository root (``<repo>/../shared``), or
``/work/shared`` when that does not exist.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["repo_root", "samples_dir", "shared_dir"]


def repo_root() -> Path:
    """The repository root (the directory holding ``pyproject.toml``)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").exists():
            return parent
    return here.parents[2]


def shared_dir() -> Path:
    """``<repo>/../shared`` when it exists, else ``/work/shared``."""
    beside = (repo_root() / ".." / "shared").resolve()
    if beside.is_dir():
        return beside
    return Path("/work/shared")


def samples_dir() -> Path:
    """``shared_dir() / "samples"``."""
    return shared_dir() / "samples"
