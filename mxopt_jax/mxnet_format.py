"""Read MXNet checkpoints: ``.params`` files (NDArray lists) and ``.states`` files (pickled ``Updater`` states).

* :func:`load_params` reads MXNet's binary NDArray-list format (``mx.nd.save``, MXNet 1.x
  ``save_parameters``) and MXNet 2.0's ``.npy`` / ``.npz`` files into NumPy arrays, names as MXNet stored them.
* :func:`load_updater` reads the ``.states`` file of ``Updater.get_states(dump_optimizer=True)`` or a Gluon
  ``Trainer.save_states`` (MXNet 1.9.1 and 2.0) and returns an :class:`mxopt_jax.Updater` whose next calls
  continue the MXNet run.
* :func:`load_trainer` resumes a Gluon ``Trainer`` run by parameter name (``.params`` + ``.states``): every
  index paired with its name by MXNet's order rule, parameters without optimizer state (BatchNorm's running
  statistics) never updated, the gradient scale explicit, gradients by name, and ``to_optax`` for ``jax.jit``.
* :func:`read_states` shows what a ``.states`` file holds, as plain data.

A ``.states`` file is a pickle; it is read through a whitelist: mxopt_jax's own interpreter of the pickle opcode
stream, never ``pickle``, in which only an allow-list makes objects (MXNet NDArray payloads, NumPy arrays of
plain numeric dtypes from exact-size buffers, NumPy scalars, plain containers and numbers, MXNet's optimizer and
scheduler classes mapped onto inert data holders) and ``BUILD`` sets state only on those holders. Only regular
files are read. Reading any file, and building the states it holds, stays within ``max(64 MiB, 32 x the file's
size)`` (``max_bytes=`` raises it), nests at most 64 deep and takes only strings, numbers and short flat tuples
as dictionary keys; every field the resume takes (scheduler positions, update counts, state dtypes) is checked
against what MXNet itself writes. Anything else is refused with a ``ValueError`` naming the file, the offset or
path in it and what was refused, before it could run. No MXNet is needed.
"""

from ._src.mxnet_format import (
    MXNetObject,
    TrainerCheckpoint,
    load_params,
    load_trainer,
    load_updater,
    read_states,
)

__all__ = ["MXNetObject", "TrainerCheckpoint", "load_params", "load_trainer", "load_updater", "read_states"]
