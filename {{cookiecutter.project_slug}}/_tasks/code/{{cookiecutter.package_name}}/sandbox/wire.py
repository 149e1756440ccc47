"""Framing and the plain-data codec shared by the trusted side and the worker (standard library only).

Frames are a 4-byte big-endian length and a JSON document. Values cross as plain data: ``None``, bool, int,
float, str as themselves, lists as arrays, and tuples, dicts, sets and frozensets as one-key objects tagged
``t``, ``d``, ``s``, ``f``; ``collections.Counter`` and ``OrderedDict``, whose ``==`` differs from a dict's, as
``C`` and ``O``. An instance of a subclass of one of these (a ``defaultdict``, a namedtuple, an ``IntEnum`` member,
a ``str`` enum) crosses as the value of the type it derives from, copied by that type's own method, so that it is
compared as Python compares that type: ``Counter('ab') == {'a': 1, 'b': 1}``, ``Point(1, 2) == (1, 2)``,
``Color.RED == 1``; never by a method of its own class (an ``__eq__`` that says yes to everything compares as the
plain value it holds). A class of the solution's own with public methods stays in the sandbox (see ``harness``).
Decoding untrusted text can only ever build those exact types, and does so in bounded time and memory, whatever
the text holds (the trainer decodes every reply of a job's child, outside the job's limits, with the GIL held):

* a frame holds at most ``MAX_FRAME`` bytes (4 MiB) and a document at most ``MAX_VALUES`` values (2**19), counted as
  the commas, colons and opening brackets in the text, those inside strings included (so a text of 4 MiB of ``[],``
  is refused before one list is built); decoding nests at most as deep as the recursion limit (RecursionError);
* a set, frozenset or dict is built only when at most ``MAX_COLLISIONS`` (8) of its items (keys) share their full
  hash with an earlier one: items of one hash (ints ``k * (2**61 - 1)`` all hash to 0, and so do tuples built of
  them) cost n**2/2 comparisons to insert, ~30 s for a 1 MB reply. Strings hash with a keyed SipHash;
* ints are bounded by the interpreter's limit on digits (``sys.get_int_max_str_digits()``: 4300 by default, since
  Python 3.10.7).

So decoding any frame takes at most a few tenths of a second and ~40 MiB while it lasts (0.2 s and 32 MiB at worst
on a 2-core VM, for half a million empty lists or object keys; the tests bound hostile replies at 1 s).
"""

from __future__ import annotations

import collections
import json
import os
import struct
from collections.abc import Callable

MAX_FRAME = 4 << 20
MAX_VALUES = 1 << 19
MAX_COLLISIONS = 8
# Messages on the trainer's control socket to a worker (one message each, no length prefix): JOB (the job's limits),
# FINISH (end the job; FINISH + EOF when the trainer found the job's channel closed or broken); the worker answers
# how the job ended and then "clean", with the next job's two pipe ends attached. The job's code, calls and answers
# never pass there: they go through the job's own pipes.
JOB, FINISH, EOF = b"J", b"F", b"e"
# A job's first frame to its process (see ``jobproc``): its budgets (wall-clock seconds, memory bytes, file bytes,
# processes), then the solution's text (UTF-8).
FIRST = struct.Struct("!4q")


def dumps(obj: object) -> bytes:
    """``obj`` (acyclic) as compact JSON (ASCII only: text outside ASCII is escaped), as ``json.dumps`` writes it."""
    return "".join(_ENCODE(obj, 0)).encode()


def frame(obj: object) -> bytes:
    data = dumps(obj)
    return struct.pack("!I", len(data)) + data


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Reader:
    """Frames from one file descriptor, in as few reads as possible: whatever arrives after a frame is kept for
    the next one (a peer may send its next frame before this one is taken)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = bytearray()

    def payload(self, ready: Callable[[int], bool] | None = None, limit: int = MAX_FRAME) -> bytes:
        """The next frame's payload. ``ready(fd)`` is asked before each read and returns False to give up
        (TimeoutError); end of file raises EOFError, a declared size over ``limit`` ValueError."""
        buf = self.buf
        while True:
            need = 4
            if len(buf) >= 4:
                (size,) = struct.unpack_from("!I", buf)
                if size > limit:
                    raise ValueError("oversized frame")
                need = 4 + size
                if len(buf) >= need:
                    data = bytes(buf[4:need])
                    del buf[:need]
                    return data
            if ready is not None and not ready(self.fd):
                raise TimeoutError
            # at least a page, so that small frames take one read; no more than the frame needs beyond that (each
            # read allocates its size: a sandboxed child writes fewer fresh pages)
            chunk = os.read(self.fd, max(need - len(buf), 4096))
            if not chunk:
                raise EOFError
            buf += chunk


# ------------------------------------------------------------------------------------------------ plain data


# The plain value of an instance of a subclass, by the plain type's own method; Counter and OrderedDict cross tagged.
_COPY = {int: int.__int__, float: float.__float__, str: str.__str__, list: list.copy, dict: dict.copy, set: set.copy,
         frozenset: frozenset.copy, tuple: lambda v: tuple.__getitem__(v, slice(None))}  # fmt: skip
_MAPPINGS = {collections.Counter: ("C", dict.items), collections.OrderedDict: ("O", collections.OrderedDict.items)}
_LIBRARY = ("collections", "enum", "typing")  # their classes in a value's ancestry add no methods a test may call


def _base(t: type) -> type | None:
    """The type an instance of ``t`` crosses as, or None (it stays in the sandbox): the first plain type (or Counter,
    OrderedDict) among its ancestors, unless a class before it defines public methods of its own (``push``)."""
    for c in t.__mro__:
        if c in _COPY or c in _MAPPINGS:
            return c
        if c.__module__ not in _LIBRARY and any(
            not k.startswith("_") and (callable(x) or isinstance(x, (classmethod, staticmethod)))
            for k, x in vars(c).items()
        ):
            return None
    return None


def encode(v: object, depth: int = 0) -> object:
    """Plain data as JSON: lists as arrays, tuples/sets/frozensets/dicts (and Counter, OrderedDict) as one-key tagged
    objects; an instance of a subclass as the value of the type it derives from (see the module's docstring)."""
    if depth > 100:
        raise ValueError("value nested too deeply")
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str:
        return v
    if t is list:
        return [encode(x, depth + 1) for x in v]
    if t is tuple:
        return {"t": [encode(x, depth + 1) for x in v]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in v.items()]}
    if t is set or t is frozenset:
        return {"s" if t is set else "f": [encode(x, depth + 1) for x in v]}
    base = _base(t)
    if base in _MAPPINGS:
        tag, items = _MAPPINGS[base]
        return {tag: [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in items(v)]}
    if base is not None:
        return encode(_COPY[base](v), depth)
    raise TypeError(f"{t.__name__} is not plain data")


def _tagged(pairs: list) -> object:
    if len(pairs) != 1 or pairs[0][0] not in ("t", "d", "s", "f", "C", "O") or type(pairs[0][1]) is not list:
        return dict(pairs)  # a message envelope (an encoded dict is always tagged "d")
    tag, items = pairs[0]
    if tag == "t":
        return tuple(items)
    if tag in ("d", "C", "O"):
        if not all(type(kv) is list and len(kv) == 2 for kv in items):
            raise ValueError("malformed dict")
        _few_collisions([kv[0] for kv in items])
        return dict(items) if tag == "d" else _REBUILD[tag](items)
    _few_collisions(items)
    return set(items) if tag == "s" else frozenset(items)


def _few_collisions(items: list) -> None:
    """Refuse items of which more than MAX_COLLISIONS share their hash with another. The hashes are ints, and a set
    of them is itself safe: ints of one hash differ by multiples of 2**61 - 1, so at most 9 hashes share one."""
    if len(items) > MAX_COLLISIONS and len(items) - len(set(map(hash, items))) > MAX_COLLISIONS:
        raise ValueError("too many hash collisions")


_REBUILD = {"C": lambda items: collections.Counter(dict(items)), "O": collections.OrderedDict}


def _unencodable(obj: object) -> object:
    raise TypeError(f"{type(obj).__name__} is not plain data")


# Built once, and called without the json module's Python layers (``json.dumps``/``json.loads`` build a new encoder
# or decoder on every call when given options): the C encoder, as ``JSONEncoder(separators=(",", ":"))`` makes it
# (values from ``encode`` are acyclic), and the C scanner of ``JSONDecoder(object_pairs_hook=_tagged)``.
_ENCODE = json.encoder.c_make_encoder(None, _unencodable, json.encoder.encode_basestring_ascii, None, ":", ",",
                                      False, False, True) if json.encoder.c_make_encoder else (
    lambda obj, _level: json.JSONEncoder(separators=(",", ":")).iterencode(obj))  # fmt: skip
_SCAN = json.JSONDecoder(object_pairs_hook=_tagged).scan_once


def decode(payload: bytes | str) -> object:
    """Plain data from JSON text; bytes must be UTF-8 (``dumps`` writes ASCII). Raises ValueError (malformed, too
    many values, too many hash collisions, an unhashable set item or key) or RecursionError."""
    text = payload if type(payload) is str else payload.decode()
    if text.count(",") + text.count(":") + text.count("[") + text.count("{") >= MAX_VALUES:
        raise ValueError("too many values")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:  # the scanner's way of saying the text is not JSON
        raise ValueError("malformed JSON") from None
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    if end != len(text):  # no whitespace around the document either: ``dumps`` writes none
        raise ValueError("extra data after the JSON document")
    return value
