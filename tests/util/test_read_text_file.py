"""pumice._util.files.read_text_file: the one reader of files a user names."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from pumice._util.files import MAX_INPUT_FILE_BYTES, InputFileError, NotTextError, read_text_file


def test_text_is_read_as_text_mode_reads_it(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_bytes(b"\xef\xbb\xbfa,b\r\n1,2\r3\n")
    assert read_text_file(p) == "a,b\n1,2\n3\n"


def test_a_pipe_is_read(tmp_path: Path) -> None:
    """``--nodes <(...)`` hands over a pipe: still read (up to the limit)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("x,y\n"), daemon=True)  # a failed read: no hang
    writer.start()
    assert read_text_file(fifo) == "x,y\n"
    writer.join(timeout=5)


def test_a_pipe_past_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pumice._util.files as files

    monkeypatch.setattr(files, "MAX_INPUT_FILE_BYTES", 10)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("x" * 20), daemon=True)
    writer.start()
    with pytest.raises(InputFileError, match=r"too large: more than 10 bytes"):
        read_text_file(fifo)
    writer.join(timeout=5)


def test_a_character_device_is_refused_unread() -> None:
    with pytest.raises(InputFileError, match=r"^/dev/zero: not a regular file \(a character device\)$"):
        read_text_file(Path("/dev/zero"))


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"not a regular file \(a directory\)$"):
        read_text_file(tmp_path)


def test_a_file_past_the_limit_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "big"
    with p.open("wb") as f:
        f.truncate(MAX_INPUT_FILE_BYTES + 1)
    with pytest.raises(InputFileError, match=r"too large: 268,435,457 bytes \(at most 256 MiB is read\)$"):
        read_text_file(p)


def test_bytes_that_are_not_utf8_name_the_first(tmp_path: Path) -> None:
    p = tmp_path / "b"
    p.write_bytes(b"ab\xf6")
    with pytest.raises(NotTextError, match="byte 0xf6 at offset 2 is not UTF-8"):
        read_text_file(p)


def test_a_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_text_file(tmp_path / "nope")
