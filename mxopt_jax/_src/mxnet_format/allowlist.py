"""The allow-list of MXNet's ``.states`` files: what the pickle interpreter (:mod:`.opcodes`) may make.

Allowed globals, each with the exact arguments its pickles use (nothing named in the file is ever looked up or
called):

* ``mxnet.ndarray(.ndarray).NDArray`` / ``mxnet.numpy(.multiarray).ndarray``: an inert holder whose state, the
  raw ``NDArray::Save`` record, is decoded into NumPy by :mod:`.arrays`;
* ``builtins.bytearray`` (of bytes, or of a Latin-1 string), ``bytes()``, ``_codecs.encode(str, 'latin1')``;
* NumPy: ``dtype`` for the plain numeric kinds MXNet writes only (bool, int, uint, float; no complex, structured, object or
  void dtypes), ``_reconstruct(ndarray, (0,), b'b')`` and ``_frombuffer`` for contiguous buffers whose byte
  count equals shape x itemsize and comes from the file, ``scalar``;
* MXNet's optimizer classes (in ``mxnet.optimizer`` and its modules, exact names) and learning-rate schedulers
  (``mxnet.lr_scheduler``): inert :class:`MXNetObject` holders; a class outside the list becomes an inert
  stand-in, accepted only as the file's optimizer or its ``lr_scheduler`` (at most two such classes per file).
  The holders of MXNet's classes are instances of two fixed classes, each carrying the module and name of its
  pickle's global; a stand-in's class is made for the file (at most two) and goes with its objects: nothing a
  file names is kept by the process after the objects read from it.

``BUILD`` sets state only on the holders the reader itself made, once, never on a global; an object's class
comes from the pickle's global alone (its state cannot name ``mx_module``, ``mx_class``, any ``mx_*`` or
dunder attribute).
"""

from __future__ import annotations

import math
import pickle
from typing import Any, TypeGuard

import numpy as np

from .. import registry
from .arrays import _ndarray_from_raw
from .limits import Budget, OverBudget, shape_refusal
from .opcodes import Global, Refused

#: MXNet's optimizer classes a pickle may name: the base class and every class of the optimizer table (their
#: names are MXNet's), in MXNet's optimizer modules (exact names: 1.x keeps them all in ``optimizer``).
_MX_OPTIMIZERS = {"Optimizer", *(e.class_name for e in registry.TABLE)}
_OPTIMIZER_MODULES = {"mxnet.optimizer"} | {
    f"mxnet.optimizer.{m}"
    for m in (
        "optimizer contrib sgd sgld signum dcasgd nag adagrad adadelta adam adamW adamax nadam ftrl ftml "
        "lars lamb lans rmsprop adabelief bert_adam radam updater utils"
    ).split()
}
_MX_SCHEDULERS = {
    "LRScheduler",
    "FactorScheduler",
    "MultiFactorScheduler",
    "PolyScheduler",
    "CosineScheduler",
}
_ALLOWED_ONLY = (
    "only MXNet NDArrays, optimizers, learning-rate schedulers, NumPy arrays and plain containers/numbers are "
    "allowed in a .states file"
)


class MXNetObject:
    """Inert stand-in for a pickled MXNet optimizer / scheduler: its class name, module and attributes.

    ``mx_module`` / ``mx_class`` name the MXNet class: they come from the pickle's globals alone (a file cannot
    set them: they are slots, outside ``vars(obj)``); the pickled attributes become instance attributes
    (readable with ``vars(obj)``). No MXNet code is involved.
    """

    __slots__ = ("__dict__", "mx_class", "mx_module")

    def __init__(self, module: str = "", name: str = "") -> None:
        self.mx_module: str = module
        self.mx_class: str = name

    def __repr__(self) -> str:
        return f"<MXNet {self.mx_module}.{self.mx_class} (data only)>"


class _OptimizerObject(MXNetObject):
    """A pickled object of one of MXNet's optimizer classes."""

    __slots__ = ()


class _SchedulerObject(MXNetObject):
    """A pickled object of one of MXNet's learning-rate scheduler classes."""

    __slots__ = ()


class _Refused(pickle.UnpicklingError):
    pass


class _NotCallable(type):
    """Metaclass of the stand-ins for classes outside the allow-list: calling one is refused."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise _Refused(f"{getattr(cls, '_qualname', cls.__name__)}: a stand-in that cannot be called")


class _UnknownObject(MXNetObject, metaclass=_NotCallable):
    """Base of the stand-ins for classes outside the allow-list (a user's own optimizer or scheduler): one
    class per name, made for the file being read (at most two) and gone with its objects."""

    __slots__ = ()


def is_unknown(obj: Any) -> TypeGuard[MXNetObject]:
    """Whether ``obj`` stands for a pickled object of a class outside the allow-list (a user's own class)."""
    return isinstance(obj, _UnknownObject)


def is_optimizer(obj: Any) -> bool:
    """Whether ``obj`` holds one of MXNet's own optimizer classes (by the pickle's global)."""
    return isinstance(obj, _OptimizerObject)


def is_scheduler(obj: Any) -> bool:
    """Whether ``obj`` holds one of MXNet's own learning-rate scheduler classes (by the pickle's global)."""
    return isinstance(obj, _SchedulerObject)


class _NDArrayHolder:
    """An MXNet NDArray while reading: its state is the raw NDArray record."""

    __slots__ = ("array", "built")

    def __init__(self) -> None:
        self.array: np.ndarray | None = None
        self.built = False


class _DtypeHolder:
    """A NumPy dtype while reading (a plain numeric kind; its byte order set once by BUILD, before use)."""

    __slots__ = ("built", "dt", "used")

    def __init__(self, dt: np.dtype) -> None:
        self.dt, self.built, self.used = dt, False, False

    @property
    def dtype(self) -> np.dtype:
        self.used = True
        return self.dt


class _ArrayHolder:
    """A NumPy array while reading: made empty by ``_reconstruct``, its data set once by BUILD."""

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray | None = None) -> None:
        self.array = array


# The NumPy dtypes a pickle may name (NumPy pickles a dtype as dtype(kind + itemsize, False, True)).
_DTYPES = {"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"}
_NUMPY = ("numpy.core.multiarray", "numpy._core.multiarray")
_ALLOWED: dict[tuple[str, str], str] = {
    ("builtins", "bytearray"): "bytearray",
    ("__builtin__", "bytearray"): "bytearray",
    ("builtins", "bytes"): "bytes",
    ("__builtin__", "bytes"): "bytes",
    ("builtins", "object"): "object",
    ("__builtin__", "object"): "object",
    ("_codecs", "encode"): "encode",
    ("copyreg", "_reconstructor"): "reconstructor",
    ("copy_reg", "_reconstructor"): "reconstructor",
    ("numpy", "ndarray"): "ndarray",
    ("numpy", "dtype"): "dtype",
    ("numpy.core.numeric", "_frombuffer"): "frombuffer",
    ("numpy._core.numeric", "_frombuffer"): "frombuffer",
    ("mxnet.ndarray.ndarray", "NDArray"): "mx_ndarray",
    ("mxnet.ndarray", "NDArray"): "mx_ndarray",
    ("mxnet.numpy.multiarray", "ndarray"): "mx_ndarray",
    ("mxnet.numpy", "ndarray"): "mx_ndarray",
    **{(m, "_reconstruct"): "reconstruct" for m in _NUMPY},
    **{(m, "scalar"): "scalar" for m in _NUMPY},
}
_FORMS = {
    "bytearray": "bytearray(), bytearray(bytes) or bytearray(str, 'latin-1')",
    "bytes": "bytes() (protocols 0-2 pickle an empty bytes so)",
    "encode": "_codecs.encode(str, 'latin1')",
    "reconstructor": "copyreg._reconstructor(cls, object, None) of an optimizer or scheduler class",
    "dtype": f"numpy.dtype(name, False, True) with name one of {sorted(_DTYPES)}",
    "reconstruct": "_reconstruct(ndarray, (0,), b'b')",
    "scalar": "numpy scalar(dtype, bytes of its itemsize)",
    "frombuffer": "numpy _frombuffer(bytes, dtype, shape, 'C' or 'F') of exactly shape x itemsize bytes",
    "mx_ndarray": "NDArray(None)",
}


class _Policy:
    """The allow-list, for one file: what the stream may do with each global (see the module docstring)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.globals: dict[tuple[str, str], Global] = {}
        self.unknown = 0
        self.first_unknown: str | None = None  # the first global outside the list (a malicious pickle's)
        self.built: dict[int, Any] = {}  # BUILD once per object (the objects are kept alive here)

    def resolve(self, module: str, name: str, pos: int) -> Global:
        key = (module, name)
        if key in self.globals:
            return self.globals[key]
        kind = _ALLOWED.get(key)
        if kind is not None:
            g = Global(module, name, kind)
        elif name in _MX_OPTIMIZERS and module in _OPTIMIZER_MODULES:
            g = Global(module, name, "holder", _OptimizerObject)
        elif name in _MX_SCHEDULERS and module == "mxnet.lr_scheduler":
            g = Global(module, name, "holder", _SchedulerObject)
        else:
            self.unknown += 1
            self.first_unknown = self.first_unknown or f"{module}.{name}"
            if self.unknown > 2:  # a class of your own: only the optimizer and its scheduler
                raise Refused("a third class outside the allow-list", pos, name=f"{module}.{name}")
            self.budget.charge(4096, "a stand-in class", f"at byte {pos}")
            cls = _NotCallable(
                name if name.isidentifier() else "MXNetObject",
                (_UnknownObject,),
                {"__slots__": (), "_qualname": f"{module}.{name}", "__module__": __name__},
            )
            g = Global(module, name, "unknown", cls)
        self.globals[key] = g
        return g

    def call(self, func: Any, args: tuple, pos: int) -> Any:
        if not isinstance(func, Global):
            raise Refused(
                f"refused REDUCE on a {type(func).__name__} (only an allowed global is called)", pos
            )
        kind = func.kind
        made = self._call(kind, args, pos) if kind in _FORMS else None
        if made is None:
            if kind in _FORMS:
                what = "numpy array reconstruction" if kind == "reconstruct" else f"{func.qualname} call"
                raise Refused(f"refused {what}: only the form {_FORMS[kind]} is read", pos)
            raise Refused(f"a call of {func.qualname}", pos, name=self.first_unknown or func.qualname)
        return made

    def _call(self, kind: str, args: tuple, pos: int) -> Any:
        """The object made by an allowed call, or ``None`` when ``args`` are not the form it is read with."""
        n = len(args)
        if kind == "bytearray":
            if n == 0:
                return bytearray()
            if n == 1 and type(args[0]) in (bytes, bytearray):
                self.budget.charge(len(args[0]) + 64, "a bytearray", f"at byte {pos}")
                return bytearray(args[0])
            if n == 2 and type(args[0]) is str and args[1] in ("latin-1", "latin1"):
                return self._latin1(args[0], pos, bytearray)
            return None
        if kind == "bytes":
            return b"" if n == 0 else None
        if kind == "encode":
            if n == 2 and type(args[0]) is str and args[1] in ("latin-1", "latin1"):
                return self._latin1(args[0], pos, bytes)
            return None
        if kind == "reconstructor":
            ok = n == 3 and isinstance(args[0], Global) and args[0].kind in ("holder", "unknown")
            if ok and isinstance(args[1], Global) and args[1].kind == "object" and args[2] is None:
                return self._instance(args[0], pos)
            return None
        if kind == "dtype":
            ok = 1 <= n <= 3 and type(args[0]) is str and args[0] in _DTYPES
            if ok and all(type(a) is bool for a in args[1:]) and (n < 2 or args[1] is False):
                return _DtypeHolder(np.dtype(args[0]))
            return None
        if kind == "reconstruct":
            ok = n == 3 and isinstance(args[0], Global) and args[0].kind == "ndarray"
            zero = (
                type(args[1]) is tuple and len(args[1]) == 1 and type(args[1][0]) is int and args[1][0] == 0
            )
            if ok and zero and type(args[2]) in (bytes, str) and args[2] in (b"b", "b"):
                return _ArrayHolder()
            return None
        if kind == "scalar":
            if n == 2 and type(args[0]) is _DtypeHolder and type(args[1]) is bytes:
                dt = args[0].dtype
                if len(args[1]) == dt.itemsize:
                    return np.frombuffer(args[1], dtype=dt)[0]
            return None
        if kind == "frombuffer":
            if n == 4 and type(args[1]) is _DtypeHolder and args[3] in ("C", "F") and type(args[3]) is str:
                arr = self._array(args[2], args[1], args[3] == "F", args[0], pos)
                return None if arr is None else _ArrayHolder(arr)
            return None
        if kind == "mx_ndarray":
            return _NDArrayHolder() if n == 0 or (n == 1 and args[0] is None) else None
        return None

    def _latin1(self, s: str, pos: int, kind: type) -> Any:
        self.budget.charge(len(s) + 64, "a byte string", f"at byte {pos}")
        try:
            return kind(s.encode("latin1"))
        except UnicodeEncodeError:
            raise Refused("refused a Latin-1 byte string with characters beyond U+00FF", pos) from None

    def _instance(self, g: Global, pos: int) -> MXNetObject:
        """An inert holder of the class ``g`` names (its module and name, from the global alone)."""
        self.budget.charge(256, "an object", f"at byte {pos}")
        cls: Any = g.cls
        obj = object.__new__(cls)  # never cls(...): a stand-in's class refuses calls
        MXNetObject.__init__(obj, g.module, g.name)
        return obj

    def _array(self, shape: Any, dtype: Any, fortran: Any, raw: Any, pos: int) -> np.ndarray | None:
        """A contiguous array of exactly ``shape`` x itemsize bytes from the file, copied in the machine's byte
        order (values unchanged); ``None`` if the arguments are not of that form."""
        if type(shape) is not tuple or len(shape) > 32 or not all(type(d) is int and d >= 0 for d in shape):
            return None
        if (
            type(dtype) is not _DtypeHolder
            or type(fortran) is not bool
            or type(raw) not in (bytes, bytearray)
        ):
            return None
        dt = dtype.dtype
        refusal = shape_refusal(shape, dt.itemsize)
        if refusal is not None:
            raise Refused(f"refused a NumPy array of {refusal}", pos)
        nbytes = math.prod(shape) * dt.itemsize
        if nbytes != len(raw):
            raise Refused(
                f"refused a NumPy array of shape {shape} {dt} ({nbytes} bytes) with {len(raw)} bytes of data",
                pos,
            )
        self.budget.charge(nbytes + 112, f"a NumPy array of {nbytes} bytes", f"at byte {pos}")
        arr = np.frombuffer(raw, dtype=dt).reshape(shape, order="F" if fortran else "C")
        return arr.astype(dt.newbyteorder("="), order="K")

    def new(self, cls: Any, args: tuple, kwargs: dict, pos: int) -> Any:
        if isinstance(cls, Global) and not args and not kwargs:
            if cls.kind in ("holder", "unknown"):
                return self._instance(cls, pos)
            if cls.kind == "mx_ndarray":
                return _NDArrayHolder()
        if isinstance(cls, Global):
            raise Refused(
                "an object creation with arguments or of a class not allowed", pos, name=cls.qualname
            )
        raise Refused(f"refused NEWOBJ on a {type(cls).__name__} (only on an allowed class)", pos)

    def build(self, obj: Any, state: Any, pos: int) -> None:
        if isinstance(obj, Global):
            raise Refused(f"setting attributes of the global {obj.qualname} (BUILD)", pos, name=obj.qualname)
        if not isinstance(obj, (MXNetObject, _NDArrayHolder, _DtypeHolder, _ArrayHolder)):
            raise Refused(f"refused BUILD on a {type(obj).__name__} (only on the reader's own holders)", pos)
        if id(obj) in self.built or (type(obj) is _ArrayHolder and obj.array is not None):
            raise Refused(f"refused a second BUILD of the same {_label(obj)}", pos)
        self.built[id(obj)] = obj
        if isinstance(obj, MXNetObject):
            _build_object(obj, state, pos)
        elif type(obj) is _NDArrayHolder:
            self._build_ndarray(obj, state, pos)
        elif type(obj) is _DtypeHolder:
            _build_dtype(obj, state, pos)
        elif type(obj) is _ArrayHolder:
            self._build_array(obj, state, pos)

    def _build_ndarray(self, obj: _NDArrayHolder, state: Any, pos: int) -> None:
        if type(state) is not dict or len(state) != 1 or "handle" not in state:
            raise Refused("refused an NDArray state that is not {'handle': bytes}", pos)
        handle = state["handle"]
        if type(handle) in (bytes, bytearray):
            try:
                obj.array = _ndarray_from_raw(bytes(handle), "pickled NDArray", self.budget)
            except OverBudget:
                raise
            except ValueError as exc:
                raise Refused(str(exc), pos, malformed=True) from None
        elif handle is not None:
            raise Refused(f"refused an NDArray handle that is a {type(handle).__name__}, not bytes", pos)
        obj.built = True

    def _build_array(self, obj: _ArrayHolder, state: Any, pos: int) -> None:
        if type(state) is tuple and len(state) == 5 and type(state[0]) is int and state[0] == 1:
            state = state[1:]
        arr = self._array(*state, pos) if type(state) is tuple and len(state) == 4 else None
        if arr is None:
            raise Refused(
                "refused a NumPy array state that is not (1, shape, dtype, is_fortran, bytes) of a plain numeric "
                "dtype",
                pos,
            )
        obj.array = arr


def _label(obj: Any) -> str:
    if isinstance(obj, MXNetObject):
        return f"{obj.mx_module}.{obj.mx_class} object"
    return {_NDArrayHolder: "NDArray", _DtypeHolder: "NumPy dtype", _ArrayHolder: "NumPy array"}[type(obj)]


def _build_object(obj: MXNetObject, state: Any, pos: int) -> None:
    """An optimizer's / scheduler's attributes: a dict of names (no dunder names, none starting with ``mx_``:
    ``mx_module`` / ``mx_class`` come from the pickle's global alone)."""
    if type(state) is tuple and len(state) == 2 and state[1] is None:
        state = state[0]
    if type(state) is not dict:
        raise Refused(f"refused a {_label(obj)} state that is not a dict of attributes", pos)
    for k in state:
        if type(k) is not str or k.startswith(("__", "mx_")):
            raise Refused(
                f"refused the attribute {str(k)[:80]!r} of a {_label(obj)} (its class comes from the pickle's "
                "global, never from its state)",
                pos,
            )
    obj.__dict__.update(state)


def _build_dtype(obj: _DtypeHolder, state: Any, pos: int) -> None:
    """NumPy's dtype state of a plain type: ``(3, byteorder, None, None, None, -1, -1, 0)``."""
    plain = type(state) is tuple and len(state) == 8 and type(state[0]) is int and state[0] == 3
    plain = plain and all(state[i] is None for i in (2, 3, 4))
    plain = plain and all(type(state[i]) is int for i in (5, 6, 7)) and state[5:] == (-1, -1, 0)
    order = state[1] if plain else None
    if obj.used:
        raise Refused("refused a dtype state set after the dtype was used", pos)
    if type(order) is not str or order not in ("<", ">", "=", "|") or (order == "|" and obj.dt.itemsize > 1):
        raise Refused(
            "refused a NumPy dtype state other than (3, byte order, None, None, None, -1, -1, 0): structured, "
            "subarray and aligned dtypes are never read",
            pos,
        )
    if order == "<" and obj.dt.itemsize > 1:
        obj.dt = obj.dt.newbyteorder("<")
    elif order == ">" and obj.dt.itemsize > 1:
        obj.dt = obj.dt.newbyteorder(">")
    obj.built = True
