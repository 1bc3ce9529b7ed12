"""Read MXNet checkpoints: ``.params`` files (NDArray lists) and ``.states`` files (pickled ``Updater`` states).

Two readers, neither of which needs MXNet:

* :func:`load_params` reads MXNet's binary NDArray-list format, as written by ``mx.nd.save``,
  ``net.save_parameters`` / ``Module.save_checkpoint`` (MXNet 1.x), and MXNet 2.0's ``.npy`` / ``.npz``
  files (``mx.npx.save``, ``mx.npx.savez``, Gluon 2.0 ``save_parameters``), into NumPy arrays.
* :func:`load_updater` reads the ``.states`` file written by ``Updater.get_states(dump_optimizer=True)`` or a
  Gluon ``Trainer.save_states`` (MXNet 1.9.1 and 2.0.0b1; also ``dump_optimizer=False`` files) and returns an
  :class:`mxopt_jax.Updater` whose next calls continue the MXNet run: optimizer class and hyperparameters,
  ``rescale_grad``, multipliers, ``idx2name``, the learning-rate scheduler and its position, ``num_update``,
  the per-index (and per-device) update counts and every index's state (multi-precision masters included).

A ``.states`` file is a Python pickle. It is never given to ``pickle``: mxopt_jax reads the opcode stream with
its own restricted interpreter, in which only an allow-list of constructors makes objects (MXNet NDArray
payloads, decoded from their raw bytes into NumPy, never through MXNet; NumPy arrays of plain numeric dtypes
from contiguous buffers; plain containers and numbers; MXNet's optimizer and learning-rate-scheduler classes as
inert data holders), ``BUILD`` sets state only on those holders, and every allocation is counted against a
budget tied to the file's size. Anything else raises ``ValueError`` naming the file, the byte offset or path in
it and what was refused; nothing named in the file is ever looked up or called. Nothing else in mxopt_jax
unpickles.

Examples (run from the repository root; the files are real MXNet 2.0 output):
  >>> import jax.numpy as jnp
  >>> from mxopt_jax.mxnet_format import load_params, load_updater
  >>> params = load_params("tests/golden/mxnet_ckpt/mx20_adam.params")
  >>> updater = load_updater("tests/golden/mxnet_ckpt/mx20_adam.states")
  >>> weights = [jnp.asarray(params[n]) for n in sorted(params)]
  >>> weights = updater([0, 1, 2, 3], [jnp.zeros_like(w) for w in weights], weights)

Modules, bottom up: :mod:`.limits` (the budgets), :mod:`.files` (regular files only, read within the budget),
:mod:`.arrays` (the NDArray binary format and ``.npy`` / ``.npz``), :mod:`.opcodes` (the pickle interpreter),
:mod:`.allowlist` (what it may make), :mod:`.unpickler` (``read_states``), :mod:`.attributes` (what the resume
reads of a pickled optimizer, checked), :mod:`.scheduler_state` (a pickled scheduler rebuilt at its position,
checked), :mod:`.states` (an MXNet optimizer state in mxopt_jax's layout, its dtypes checked),
:mod:`.updater` (``load_updater``: the optimizer rebuilt), :mod:`.checkpoint` (``TrainerCheckpoint``) and
:mod:`.trainer` (``load_trainer``: a Gluon Trainer resumed by name).
"""

from __future__ import annotations

from .allowlist import MXNetObject
from .arrays import load_params
from .trainer import TrainerCheckpoint, load_trainer
from .unpickler import read_states
from .updater import load_updater

__all__ = ["MXNetObject", "TrainerCheckpoint", "load_params", "load_trainer", "load_updater", "read_states"]

# doctest.testmod(mxopt_jax._src.mxnet_format) runs the public functions' examples, which live in the modules
__test__ = {
    "load_params": load_params,
    "read_states": read_states,
    "load_updater": load_updater,
    "load_trainer": load_trainer,
    "TrainerCheckpoint": TrainerCheckpoint,
}
