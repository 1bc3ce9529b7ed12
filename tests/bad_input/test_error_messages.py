"""Errors name structures and paths (``a/b``), never dump arrays (a NamedTuple of gradients against a dict of
parameters gave a 2,590-character ValueError, most of it the arrays' values)."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import pytest

import mxopt_jax


class Grads(NamedTuple):
    a: object
    b: object


PARAMS = {"a": jnp.full((40, 40), 0.123), "b": {"c": jnp.full((300,), 0.456)}}


def _no_values(msg: str) -> None:
    assert len(msg) < 700, len(msg)
    assert "Array(" not in msg and "0.123" not in msg and "0.456" not in msg, msg


@pytest.mark.parametrize("name", ["adam", "sgd", "lamb", "adabelief"])
def test_container_mismatch_names_structures_not_values(name):
    tx = getattr(mxopt_jax, name)()
    state = tx.init(PARAMS)
    with pytest.raises(ValueError, match=r"different tree structures") as info:
        tx.update(Grads(PARAMS["a"], PARAMS["b"]), state, PARAMS)
    msg = str(info.value)
    _no_values(msg)
    assert "namedtuple[Grads]" in msg and "'c': *" in msg


def test_missing_leaf_names_its_path():
    tx = mxopt_jax.adam()
    state = tx.init(PARAMS)
    grads = {"a": PARAMS["a"], "b": {"d": PARAMS["b"]["c"]}}
    with pytest.raises(ValueError, match=r"different tree structures") as info:
        tx.update(grads, state, PARAMS)
    msg = str(info.value)
    _no_values(msg)
    assert "['b/c']" in msg and "['b/d']" in msg


def test_state_and_multiplier_mismatches_name_structures_not_values():
    tx = mxopt_jax.adam()
    state = tx.init({"a": PARAMS["a"]})
    with pytest.raises(ValueError, match=r"optimizer state `\w+` does not match") as info:
        tx.update(PARAMS, state)
    _no_values(str(info.value))
    with pytest.raises(ValueError, match=r"`lr_mult` must be a pytree") as info:
        mxopt_jax.adam(lr_mult={"a": 1.0}).init(PARAMS)
    _no_values(str(info.value))
