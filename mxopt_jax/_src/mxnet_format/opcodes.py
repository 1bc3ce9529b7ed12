"""A restricted interpreter of the pickle opcode stream (protocols 0-5), for MXNet's ``.states`` files.

Not ``pickle.Unpickler``: this module reads the opcodes itself and makes only plain data (``None``, bools,
ints, floats, strings, bytes, bytearrays, tuples, lists, dicts, sets). Globals are never looked up: a global
is a :class:`Global` marker, and what may be done with one (``REDUCE``, ``NEWOBJ``, ``BUILD``) is decided by a
:class:`Policy` (the allow-list, :mod:`.unpickler`). Only lists, dicts and sets the reader itself made are ever
mutated. Every allocation is counted against the file's :class:`~.limits.Budget`, the nesting of MARKs is
bounded, and dictionary keys are strings, bytes, numbers and short flat tuples only (so hashing a key is cheap
and cannot recurse). Refused outright: persistent ids, the extension registry, ``INST`` / ``OBJ`` and
out-of-band buffers.
"""

from __future__ import annotations

import pickle  # its opcode constants only: nothing here unpickles
import re
import struct
from collections.abc import Callable
from typing import Any, Protocol

from .limits import MAX_DEPTH, MAX_TUPLE_KEYS, Budget, key_refusal

_MAX_INT_BYTES = 32  # LONG1 / LONG4: integers up to 256 bits (MXNet writes 64-bit counts at most)
_MAX_LINE_NUMBER = 80  # text opcodes (INT, LONG, FLOAT, PUT, GET): at most this many characters
_MAX_GLOBAL_NAME = 256
# the escapes of a Python 2 str literal (protocol 0's STRING): \xhh, \ooo and one character; a backslash
# followed by anything else, or by nothing, is refused
_ESCAPE = re.compile(rb"\\(?:x([0-9a-fA-F]{2})|([0-7]{1,3})|(.)|\Z)", re.DOTALL)
_ESCAPES = {bytes([c]): bytes([v]) for c, v in zip(b"\\'\"abfnrtv", b"\\'\"\a\b\f\n\r\t\v", strict=True)}


class Refused(Exception):
    """A refusal at byte ``pos`` of the stream (``None``: the message names a path in the data instead).
    ``malformed``: the stream is broken rather than refused; ``name``: the global refused (``module.name``)."""

    def __init__(
        self, what: str, pos: int | None, *, malformed: bool = False, name: str | None = None
    ) -> None:
        super().__init__(what)
        self.what, self.pos, self.malformed, self.name = what, pos, malformed, name


class Global:
    """A global named by the stream (``GLOBAL`` / ``STACK_GLOBAL``), as the policy resolved it: never the
    real object. ``kind`` says what the policy allows; ``cls`` is a holder class, where there is one."""

    __slots__ = ("cls", "kind", "module", "name")

    def __init__(self, module: str, name: str, kind: str, cls: type | None = None) -> None:
        self.module, self.name, self.kind, self.cls = module, name, kind, cls

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"

    def __repr__(self) -> str:
        return f"<global {self.qualname}>"


class Policy(Protocol):
    """What the stream may do with globals; each hook returns the object made or raises :class:`Refused`."""

    def resolve(self, module: str, name: str, pos: int) -> Global: ...

    def call(self, func: Any, args: tuple, pos: int) -> Any: ...

    def new(self, cls: Any, args: tuple, kwargs: dict, pos: int) -> Any: ...

    def build(self, obj: Any, state: Any, pos: int) -> None: ...


# what the reader counts for the objects it makes (bytes, CPython 64-bit sizes rounded up)
# (a memo entry: the dict's slot and index, its integer key, the dict's growth; measured about 100 bytes)
_SLOT, _TUPLE, _LIST, _DICT, _SET, _ITEM, _MEMO = 8, 40, 56, 64, 216, 64, 128


def _const(value: Any) -> Callable[[_Machine], None]:
    def op(m: _Machine) -> None:
        m.push(value, _SLOT)

    return op


def _fixed(fmt: str, cost: int) -> Callable[[_Machine], None]:
    """The handler of an opcode whose argument is one number of the struct format ``fmt``."""

    def op(m: _Machine) -> None:
        m.push(m.unpack(fmt), cost)

    return op


def _sized(fmt: str, kind: str | type) -> Callable[[_Machine], None]:
    """The handler of an opcode whose argument is a length (``fmt``) and that many bytes: a string decoded as
    ``kind`` (``"py2"``: ASCII, as ``pickle`` reads a Python 2 str) or a ``bytes`` / ``bytearray``."""

    def op(m: _Machine) -> None:
        raw = m.read(m.unpack(fmt))
        if isinstance(kind, str):
            m._str(raw, kind)
        else:
            m.push(kind(raw), len(raw) + 64)

    return op


class _Machine:
    def __init__(self, data: bytes, policy: Policy, budget: Budget) -> None:
        self.data = data
        self.policy = policy
        self.budget = budget
        self.pos = 0
        self.op = 0  # the offset of the opcode being read
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.tuple_keys = 0
        self.proto = 0

    # ------------------------------------------------------------------ reading the stream
    def fail(self, what: str) -> Refused:
        return Refused(what, self.op, malformed=True)

    def read(self, n: int) -> bytes:
        if n < 0 or n > len(self.data) - self.pos:
            raise self.fail(f"truncated: needs {n} bytes, {len(self.data) - self.pos} left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def readline(self, limit: int | None = None) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise self.fail("truncated: a text opcode without its newline")
        if limit is not None and end - self.pos > limit:
            raise Refused(f"refused a text argument longer than {limit} characters", self.op)
        out = self.data[self.pos : end]
        self.pos = end + 1
        return out

    def charge(self, n: int, what: str) -> None:
        self.budget.charge(n, what, f"at byte {self.op}")

    def push(self, x: Any, cost: int = 0) -> None:
        if cost:
            self.charge(cost + _SLOT, "the pickle's objects")
        self.stack.append(x)

    def pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise self.fail("no MARK to pop")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def check_key(self, k: Any) -> None:
        refusal = key_refusal(k)
        if refusal is None and isinstance(k, tuple):
            self.tuple_keys += 1
            if self.tuple_keys > MAX_TUPLE_KEYS:
                refusal = f"refused more than {MAX_TUPLE_KEYS} tuples as dictionary keys"
        if refusal is not None:
            raise Refused(refusal, self.op)

    # ------------------------------------------------------------------ the loop
    def load(self) -> Any:
        table = _TABLE
        data = self.data
        while True:
            self.op = self.pos
            if self.pos >= len(data):
                raise self.fail("truncated: no STOP opcode")
            code = data[self.pos]
            self.pos += 1
            handler = table.get(code)
            if handler is None:
                raise self.fail(f"unknown opcode 0x{code:02x}")
            try:
                if handler(self):  # STOP
                    break
            except IndexError:
                raise self.fail(f"opcode {_NAMES[code]} on a stack too short") from None
        if self.metastack:
            raise self.fail("STOP inside an unclosed MARK")
        if len(self.stack) != 1:
            raise self.fail(f"STOP with {len(self.stack)} objects on the stack (one expected)")
        if self.pos != len(data):
            raise self.fail(f"{len(data) - self.pos} trailing bytes after STOP")
        return self.stack[0]

    # ------------------------------------------------------------------ opcodes: framing and the stack
    def op_proto(self) -> None:
        self.proto = self.unpack("<B")
        if self.proto > 5:
            raise self.fail(f"pickle protocol {self.proto} (at most 5 is read)")

    def op_frame(self) -> None:
        n = self.unpack("<Q")
        if n > len(self.data) - self.pos:
            raise self.fail(f"truncated: a frame of {n} bytes")

    def op_stop(self) -> bool:
        return True

    def op_mark(self) -> None:
        if len(self.metastack) >= MAX_DEPTH:
            raise Refused(f"refused MARKs nested deeper than {MAX_DEPTH}", self.op)
        self.charge(_LIST + _SLOT, "the pickle's MARKs")
        self.metastack.append(self.stack)
        self.stack = []

    def op_pop(self) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self.pop_mark()

    def op_pop_mark(self) -> None:
        self.pop_mark()

    def op_dup(self) -> None:
        self.push(self.stack[-1], _SLOT)

    # ------------------------------------------------------------------ constants
    op_none = _const(None)
    op_newtrue = _const(True)
    op_newfalse = _const(False)
    op_empty_tuple = _const(())

    def op_int(self) -> None:  # protocol 0: "I<digits>\n", I01 / I00 are bools
        line = self.readline(_MAX_LINE_NUMBER)
        if line in (b"01", b"00"):
            self.push(line == b"01", _SLOT)
            return
        self.push(self._int_text(line), 64)

    def op_long(self) -> None:
        line = self.readline(_MAX_LINE_NUMBER)
        self.push(self._int_text(line[:-1] if line.endswith(b"L") else line), 64)

    def _int_text(self, line: bytes) -> int:
        try:
            return int(line.decode("ascii"), 10)
        except ValueError:
            raise self.fail("an integer opcode without a decimal integer") from None

    op_binint = _fixed("<i", 32)
    op_binint1 = _fixed("<B", _SLOT)
    op_binint2 = _fixed("<H", _SLOT)
    op_binfloat = _fixed(">d", 32)

    def _long(self, n: int) -> None:
        if n > _MAX_INT_BYTES:
            raise Refused(f"refused an integer of {n} bytes (at most {_MAX_INT_BYTES} are read)", self.op)
        self.push(int.from_bytes(self.read(n), "little", signed=True), 64)

    def op_long1(self) -> None:
        self._long(self.unpack("<B"))

    def op_long4(self) -> None:
        n = self.unpack("<i")
        if n < 0:
            raise self.fail("LONG4 with a negative length")
        self._long(n)

    def op_float(self) -> None:
        line = self.readline(_MAX_LINE_NUMBER)
        try:
            self.push(float(line.decode("ascii")), 32)
        except ValueError:
            raise self.fail("FLOAT without a decimal number") from None

    # ------------------------------------------------------------------ strings and bytes
    def _str(self, raw: bytes, how: str) -> None:
        self.charge(4 * len(raw) + 64, "the pickle's strings")
        try:
            s = raw.decode("ascii" if how == "py2" else how)
        except UnicodeDecodeError:
            what = "a Python 2 string that is not ASCII" if how == "py2" else f"a string that is not {how}"
            raise self.fail(what) from None
        self.stack.append(s)

    def op_string(self) -> None:  # protocol 0: a quoted Python 2 str literal
        line = self.readline()
        if len(line) < 2 or line[:1] not in (b"'", b'"') or line[-1:] != line[:1]:
            raise self.fail("STRING without its quotes")
        self.charge(len(line) + 64, "the pickle's strings (decoding escapes)")
        self._str(self._unescape(line[1:-1]), "py2")

    def _unescape(self, body: bytes) -> bytes:
        """A Python 2 str literal's body, its escapes decoded by a fixed table (never ``codecs.escape_decode``,
        which warns, and so writes into the warning registry, on an escape it does not know), into one
        growing buffer (no list of pieces: a body of escapes alone holds as many as it has bytes)."""
        out = bytearray()
        last = 0
        for m in _ESCAPE.finditer(body):
            out += body[last : m.start()]
            last = m.end()
            hexa, octal, char = m.groups()
            if hexa is not None:
                out.append(int(hexa, 16))
            elif octal is not None and int(octal, 8) < 256:
                out.append(int(octal, 8))
            elif char is not None and char in _ESCAPES:
                out += _ESCAPES[char]
            else:
                raise self.fail(f"STRING with an invalid escape {m.group()!r}")
        out += body[last:]
        return bytes(out)

    def op_unicode(self) -> None:
        self._str(self.readline(), "raw-unicode-escape")

    # a length (struct format), then that many bytes: a Python 2 str (ASCII), a str (UTF-8), bytes, bytearray
    op_binstring = _sized("<i", "py2")
    op_short_binstring = _sized("<B", "py2")
    op_binunicode = _sized("<I", "utf-8")
    op_short_binunicode = _sized("<B", "utf-8")
    op_binunicode8 = _sized("<Q", "utf-8")
    op_binbytes = _sized("<I", bytes)
    op_short_binbytes = _sized("<B", bytes)
    op_binbytes8 = _sized("<Q", bytes)
    op_bytearray8 = _sized("<Q", bytearray)

    # ------------------------------------------------------------------ containers
    def op_tuple(self) -> None:
        items = self.pop_mark()
        self.push(tuple(items), _TUPLE + _SLOT * len(items))

    def op_tuple1(self) -> None:
        self.stack[-1] = (self.stack[-1],)
        self.charge(_TUPLE + _SLOT, "the pickle's tuples")

    def op_tuple2(self) -> None:
        b = self.stack.pop()
        self.stack[-1] = (self.stack[-1], b)
        self.charge(_TUPLE + 2 * _SLOT, "the pickle's tuples")

    def op_tuple3(self) -> None:
        c = self.stack.pop()
        b = self.stack.pop()
        self.stack[-1] = (self.stack[-1], b, c)
        self.charge(_TUPLE + 3 * _SLOT, "the pickle's tuples")

    def op_empty_list(self) -> None:
        self.push([], _LIST)

    def op_list(self) -> None:
        items = self.pop_mark()
        self.push(items, _LIST + 2 * _SLOT * len(items))

    def _target(self, kind: type, what: str) -> Any:
        target = self.stack[-1]
        if type(target) is not kind:
            raise Refused(
                f"refused {what} on a {type(target).__name__} (only on a {kind.__name__} the pickle made)",
                self.op,
            )
        return target

    def op_append(self) -> None:
        value = self.stack.pop()
        self._target(list, "APPEND").append(value)
        self.charge(2 * _SLOT, "the pickle's lists")

    def op_appends(self) -> None:
        items = self.pop_mark()
        self._target(list, "APPENDS").extend(items)
        self.charge(2 * _SLOT * len(items), "the pickle's lists")

    def op_empty_dict(self) -> None:
        self.push({}, _DICT)

    def _setitems(self, d: dict, items: list[Any]) -> None:
        if len(items) % 2:
            raise self.fail("a dictionary with an odd number of keys and values")
        self.charge(_ITEM * (len(items) // 2), "the pickle's dictionaries")
        for i in range(0, len(items), 2):
            self.check_key(items[i])
            d[items[i]] = items[i + 1]

    def op_dict(self) -> None:
        items = self.pop_mark()
        d: dict = {}
        self._setitems(d, items)
        self.push(d, _DICT)

    def op_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._setitems(self._target(dict, "SETITEM"), [key, value])

    def op_setitems(self) -> None:
        items = self.pop_mark()
        self._setitems(self._target(dict, "SETITEMS"), items)

    def _set_items(self, items: list[Any]) -> list[Any]:
        self.charge(_ITEM * len(items), "the pickle's sets")
        for k in items:
            self.check_key(k)
        return items

    def op_empty_set(self) -> None:
        self.push(set(), _SET)

    def op_additems(self) -> None:
        items = self._set_items(self.pop_mark())
        self._target(set, "ADDITEMS").update(items)

    def op_frozenset(self) -> None:
        self.push(frozenset(self._set_items(self.pop_mark())), _SET)

    # ------------------------------------------------------------------ the memo
    def _put(self, idx: int) -> None:
        if not self.stack:
            raise self.fail("memoizing an empty stack")
        self.charge(_MEMO, "the pickle's memo")
        self.memo[idx] = self.stack[-1]

    def _get(self, idx: int) -> None:
        if idx not in self.memo:
            raise self.fail(f"memo entry {idx} not found")
        self.push(self.memo[idx], _SLOT)

    def op_put(self) -> None:
        self._put(self._int_text(self.readline(_MAX_LINE_NUMBER)))

    def op_binput(self) -> None:
        self._put(self.unpack("<B"))

    def op_long_binput(self) -> None:
        self._put(self.unpack("<I"))

    def op_memoize(self) -> None:
        self._put(len(self.memo))

    def op_get(self) -> None:
        self._get(self._int_text(self.readline(_MAX_LINE_NUMBER)))

    def op_binget(self) -> None:
        self._get(self.unpack("<B"))

    def op_long_binget(self) -> None:
        self._get(self.unpack("<I"))

    # ------------------------------------------------------------------ globals and objects: the policy
    def _global(self, module: str, name: str) -> None:
        if not (0 < len(module) <= _MAX_GLOBAL_NAME and 0 < len(name) <= _MAX_GLOBAL_NAME):
            raise Refused("refused a global with an empty or overlong name", self.op)
        self.push(self.policy.resolve(module, name, self.op), 64)

    def op_global(self) -> None:
        module = self.readline(_MAX_GLOBAL_NAME)
        name = self.readline(_MAX_GLOBAL_NAME)
        try:
            self._global(module.decode("utf-8"), name.decode("utf-8"))
        except UnicodeDecodeError:
            raise self.fail("GLOBAL with a name that is not UTF-8") from None

    def op_stack_global(self) -> None:
        name = self.stack.pop()
        module = self.stack.pop()
        if type(module) is not str or type(name) is not str:
            raise self.fail("STACK_GLOBAL with a module or name that is not a string")
        self._global(module, name)

    def op_reduce(self) -> None:
        args = self.stack.pop()
        if type(args) is not tuple:
            raise self.fail("REDUCE with arguments that are not a tuple")
        self.stack[-1] = self.policy.call(self.stack[-1], args, self.op)

    def op_newobj(self) -> None:
        args = self.stack.pop()
        if type(args) is not tuple:
            raise self.fail("NEWOBJ with arguments that are not a tuple")
        self.stack[-1] = self.policy.new(self.stack[-1], args, {}, self.op)

    def op_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        if type(args) is not tuple or type(kwargs) is not dict:
            raise self.fail("NEWOBJ_EX with arguments that are not a tuple and a dict")
        self.stack[-1] = self.policy.new(self.stack[-1], args, kwargs, self.op)

    def op_build(self) -> None:
        state = self.stack.pop()
        self.policy.build(self.stack[-1], state, self.op)

    def refused(self) -> None:
        code = self.data[self.op]
        raise Refused(
            f"refused opcode {_NAMES[code]} (persistent ids, the extension registry, INST / OBJ and "
            "out-of-band buffers are never read)",
            self.op,
        )


# The opcodes read, by pickle's own names (the handler of X is _Machine.op_x); the refused ones, likewise.
_READ = """PROTO FRAME STOP MARK POP POP_MARK DUP NONE NEWTRUE NEWFALSE INT LONG BININT BININT1 BININT2 LONG1 LONG4
FLOAT BINFLOAT STRING BINSTRING SHORT_BINSTRING UNICODE BINUNICODE SHORT_BINUNICODE BINUNICODE8 BINBYTES
SHORT_BINBYTES BINBYTES8 BYTEARRAY8 EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_LIST LIST APPEND APPENDS
EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET PUT BINPUT LONG_BINPUT MEMOIZE GET BINGET
LONG_BINGET GLOBAL STACK_GLOBAL REDUCE NEWOBJ NEWOBJ_EX BUILD""".split()
_REFUSED = "PERSID BINPERSID EXT1 EXT2 EXT4 INST OBJ NEXT_BUFFER READONLY_BUFFER".split()
_CODE = {name: getattr(pickle, name)[0] for name in (*_READ, *_REFUSED)}  # pickle's opcode bytes
_TABLE: dict[int, Callable[[_Machine], Any]] = {_CODE[n]: getattr(_Machine, f"op_{n.lower()}") for n in _READ}
_TABLE.update({_CODE[n]: _Machine.refused for n in _REFUSED})
_NAMES = {code: name for name, code in _CODE.items()}


def read_pickle(data: bytes, policy: Policy, budget: Budget) -> Any:
    """The object the pickle ``data`` describes, made by ``policy``'s rules; raises :class:`Refused`
    (or ``ValueError`` for the budget)."""
    return _Machine(data, policy, budget).load()
