"""Where the repository and the shared inputs (upstream samples, traces) are.

``shared_dir()`` is the ``shared`` folder beside the repository root (``<repo>/../shared``), or
``/work/shared`` when that does not exist.
"""

from __future__ import annotations

import shutil
from pathlib import Path

__all__ = ["kubectl_path", "repo_root", "samples_dir", "shared_dir"]


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


def kubectl_path() -> Path | None:
    """The real kubectl: the one on PATH, else ``<repo>/.venv/bin/kubectl``; None when neither
    exists (``python tools/install_kubectl.py .venv/bin`` installs it; ``make test`` does)."""
    found = shutil.which("kubectl")
    if found:
        return Path(found)
    venv = repo_root() / ".venv" / "bin" / "kubectl"
    return venv if venv.exists() else None
