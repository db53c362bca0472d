"""pumice._util.files.scan_tree / remove_tree: a tree removed with its files unlinked in parallel
(trial-9 F-11: the demo's silent one-at-a-time rmtree of its data dir)."""

from __future__ import annotations

import os
from pathlib import Path

from pumice._util.files import remove_tree, scan_tree


def _tree(root: Path, outside: Path) -> None:
    for i in range(5):
        d = root / f"d{i}" / "sub"
        d.mkdir(parents=True)
        for j in range(40):
            (d / f"f{j}").write_bytes(b"x" * 5000)
    (root / "d0" / "link-to-dir").symlink_to(outside, target_is_directory=True)
    (root / "d1" / "dangling").symlink_to(root / "nowhere")
    (root / "empty").mkdir()


def test_the_whole_tree_goes_and_a_symlinked_directory_outside_is_left_alone(tmp_path: Path) -> None:
    root, outside = tmp_path / "data", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("kept")
    _tree(root, outside)
    tree = scan_tree(root)
    assert len(tree.files) == 5 * 40 + 2  # the two symlinks are entries, not followed
    assert len(tree.dirs) == 1 + 5 * 2 + 1 and tree.dirs[-1] == str(root)
    assert tree.bytes >= 5 * 40 * 5000
    assert remove_tree(tree, workers=4) == []
    assert not root.exists()
    assert (outside / "keep").read_text() == "kept"


def test_a_missing_root_is_an_empty_tree(tmp_path: Path) -> None:
    tree = scan_tree(tmp_path / "nope")
    assert (tree.files, tree.dirs, tree.bytes, tree.errors) == ([], [], 0, [])
    assert remove_tree(tree) == []


def test_what_cannot_be_removed_is_named_not_swallowed(tmp_path: Path) -> None:
    """A file written after the scan keeps its directory and the directories above it."""
    root = tmp_path / "data"
    _tree(root, tmp_path)
    tree = scan_tree(root)
    (root / "d2" / "sub" / "late").write_text("written after the scan")
    errors = remove_tree(tree)
    assert errors == [f"{root / 'd2' / 'sub'}: Directory not empty", f"{root / 'd2'}: Directory not empty",
                      f"{root}: Directory not empty"]
    assert sorted(p.name for p in root.rglob("*")) == ["d2", "late", "sub"]


def test_an_entry_gone_meanwhile_is_no_error(tmp_path: Path) -> None:
    root = tmp_path / "data"
    _tree(root, tmp_path)
    tree = scan_tree(root)
    os.unlink(tree.files[0])
    os.rmdir(root / "empty")
    assert remove_tree(tree) == []
    assert not root.exists()
