"""Errors users act on: a full device told apart from damage."""

from pathlib import Path


def test_a_full_device_is_told_by_errno_by_text_and_through_the_errors_it_caused():
    import errno

    from hopgraph.core.errors import DiskFullError, disk_full, disk_full_error

    assert disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert disk_full(OSError("51200 requested and 16352 written"))  # numpy's, with no errno
    assert disk_full("reading it failed: (code: 13) database or disk is full")
    assert not disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk_full(ValueError("bad JSON"))
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("the tables' child failed") from inner
    except RuntimeError as outer:
        assert disk_full(outer)
    error = disk_full_error(Path("/"), written=65_536)
    assert isinstance(error, DiskFullError)
    assert "no space left on the device that holds /" in error.message
    assert "more than the 65.5 kB it had written" in error.message
    assert "no repair needed" in error.message and "repair" not in (error.hint or "")
