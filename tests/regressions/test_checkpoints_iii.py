"""Checkpoints from strangers III (issue 43): where the reader meets the training that follows it, the facade's
own ``set_states`` format, and what the budgets count. Each test builds its hostile file from the real MXNet
files under ``tests/golden/`` (or by construction) and asserts a ``ValueError`` naming the file, or a correct
load with MXNet's behaviour; each failed on the code before the fix (the docstring says how).
"""

from __future__ import annotations

import os
import pathlib

import pytest

from mxopt_jax.mxnet_format import load_params

GOLDEN = pathlib.Path(__file__).parents[1] / "golden"
CKPT, GOLD = GOLDEN / "mxnet_ckpt", GOLDEN / "mxnet_resume"
MB = 2**20


# --------------------------------------------------------------------------- 11: every read capped
def test_max_bytes_caps_the_read_whatever_the_files_size(tmp_path):
    """Before: a 1 GiB sparse file with max_bytes=1 MiB was read whole (``max(size, max_bytes)``), 1 GiB of
    memory and 22 s before the ValueError; now it is refused from its size, nothing read."""
    path = tmp_path / "sparse.params"
    with open(path, "wb") as f:
        f.truncate(2**30)
    with pytest.raises(
        ValueError, match=r"sparse\.params: refused: the file holds 1073741824 bytes.*nothing was read"
    ):
        load_params(path, max_bytes=MB)


def test_a_file_larger_than_the_machine_is_a_value_error(tmp_path):
    """Before: a 64 GiB sparse file raised MemoryError (its default budget is 32 x its size)."""
    path = tmp_path / "huge.params"
    with open(path, "wb") as f:
        f.truncate(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") + 2**30)
    with pytest.raises(ValueError, match=r"huge\.params: refused: .* more than this machine's memory"):
        load_params(path)


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs /proc")
def test_a_link_to_proc_self_mem_is_refused_as_not_regular(tmp_path):
    """Before: ``OSError`` (EIO) reading /proc/self/mem through a symlink (a regular file by its mode)."""
    link = tmp_path / "x.states"
    link.symlink_to("/proc/self/mem")
    with pytest.raises(ValueError, match=r"x\.states: refused: .* pseudo-filesystems"):
        load_params(link)
