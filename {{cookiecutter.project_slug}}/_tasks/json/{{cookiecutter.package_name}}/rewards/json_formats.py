r"""JSON Schema semantics the JSON reward applies on top of jsonschema: ECMA-262 regexes, every format of Draft
2020-12, and ``multipleOf`` by exact decimal arithmetic.

Regexes (``pattern``, ``patternProperties``, the ``regex`` format) are ECMA-262 with the ``u`` flag, as JSON Schema
asks, compiled by ``regress`` (an ECMA-262 engine): ``.`` matches no line terminator (``\n``, ``\r``, U+2028,
U+2029); ``\s``/``\S`` use ECMA's white space (U+00A0, U+FEFF, the Zs spaces and the line terminators); ``\d``
and ``\w`` are ASCII; ``$`` is the end of the text; ``\p{...}``, named groups ``(?<n>...)`` and lookbehind are
ECMA's; Python-only syntax (``(?P<n>...)``, ``(?i)``, ``(?#...)``, ``\Z``, ``\a``) is not a regex.

Formats (``FORMATS``, each a linear check of a string; other values pass): ``date-time``, ``date``, ``time`` (RFC
3339, a leap second only at 23:59:60 UTC), ``duration`` (RFC 3339 appendix A), ``email`` (RFC 5321 mailbox: dot
atoms or a quoted local part, a host name or an address literal), ``idn-email`` (RFC 6531: the same with UTF-8),
``hostname`` (RFC 1123 labels, A-labels checked by IDNA 2008), ``idn-hostname`` (IDNA 2008 through ``idna``),
``ipv4``, ``ipv6``, ``uri``, ``uri-reference`` (RFC 3986), ``iri``, ``iri-reference`` (RFC 3987), ``uuid``,
``uri-template`` (RFC 6570), ``json-pointer`` (RFC 6901), ``relative-json-pointer`` and ``regex`` (ECMA-262).
Any other format name (``color``, ``phone``) is an annotation, as Draft 2020-12 says: not checked.

Stdlib plus ``regress`` and ``idna``, imported when first needed: loaded by path in the schema worker too.
"""

from __future__ import annotations

import datetime
import ipaddress
import re
import unicodedata
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

MAX_REGEX_CACHE = 512


# -------------------------------------------------------------------------------------------- ECMA-262 regex


@lru_cache(maxsize=MAX_REGEX_CACHE)
def ecma_regex(pattern: str) -> Any:
    """``pattern`` compiled as an ECMA-262 regex with the ``u`` flag; ValueError when it is not one."""
    import regress

    try:
        return regress.Regex(pattern, "u")
    except Exception as exc:  # regress.RegressError
        raise ValueError(f"not an ECMA-262 regex: {pattern!r}") from exc


def ecma_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (ECMA-262) matches somewhere in ``text``, as JSON Schema's ``pattern`` asks."""
    return ecma_regex(pattern).find(text) is not None


class EcmaRe:
    """A stand-in for the ``re`` module where jsonschema searches patterns (``search`` only), with ECMA meaning."""

    error = ValueError

    @staticmethod
    def search(pattern: str, text: str) -> bool:
        return ecma_search(pattern, text)


def is_regex(value: object) -> bool:
    try:
        ecma_regex(value) if isinstance(value, str) else None
        return True
    except ValueError:
        return False


# ------------------------------------------------------------------------------------------------ multipleOf


def exact(number: int | float) -> Fraction:
    """A JSON number as an exact rational: a float as the shortest decimal that reads back as it (``19.99``)."""
    return Fraction(number) if isinstance(number, int) else Fraction(repr(number))


def is_multiple(value: int | float, factor: int | float) -> bool:
    """Whether ``value`` is an integer multiple of ``factor`` in decimal arithmetic (``19.99`` of ``0.01``: yes)."""
    try:
        return (exact(value) / exact(factor)).denominator == 1
    except (ValueError, OverflowError, ZeroDivisionError):  # inf / nan: not JSON numbers, never a multiple
        return False


# ------------------------------------------------------------------------------------------------ formats


def _full(pattern: str, flags: int = re.ASCII) -> Callable[[str], bool]:
    rx = re.compile(pattern, flags)
    return lambda value: rx.fullmatch(value) is not None


_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIME = re.compile(r"(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[Zz]|([+-])(\d{2}):(\d{2}))", re.ASCII)


def is_date(value: str) -> bool:
    m = _DATE.fullmatch(value)
    try:
        return m is not None and bool(datetime.date(*map(int, m.groups())))
    except ValueError:
        return False


def is_time(value: str) -> bool:
    m = _TIME.fullmatch(value)
    if m is None:
        return False
    hour, minute, second, sign, oh, om = m.groups()
    h, mi, s = int(hour), int(minute), int(second)
    if h > 23 or mi > 59 or s > 60 or (sign and (int(oh) > 23 or int(om) > 59)):
        return False
    if s == 60:  # a leap second: only at 23:59:60 UTC
        shift = (int(oh) * 60 + int(om)) * (1 if sign == "+" else -1) if sign else 0
        return (h * 60 + mi - shift) % 1440 == 23 * 60 + 59
    return True


def is_date_time(value: str) -> bool:
    return len(value) > 11 and value[10] in "Tt" and is_date(value[:10]) and is_time(value[11:])


_DUR_TIME = r"T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)"
_DUR_DATE = r"(?:\d+D|\d+M(?:\d+D)?|\d+Y(?:\d+M(?:\d+D)?)?)"
is_duration = _full(rf"P(?:{_DUR_DATE}(?:{_DUR_TIME})?|{_DUR_TIME}|\d+W)")

_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)


def is_hostname(value: str) -> bool:
    """RFC 1123 host name (a final dot is not a label), each ``xn--`` label a valid IDNA 2008 A-label."""
    if not 0 < len(value) <= 253:
        return False
    labels = value.split(".")
    if not all(_LABEL.fullmatch(label) for label in labels):
        return False
    return all(_a_label(label) for label in labels if label[2:4] == "--")


def _a_label(label: str) -> bool:
    if label[:4].lower() != "xn--":
        return False  # "--" in positions 3-4 is reserved for A-labels (RFC 5891 4.2.3.1)
    import idna

    try:
        idna.decode(label)
        return True
    except (idna.IDNAError, UnicodeError, ValueError):
        return False


def is_idn_hostname(value: str) -> bool:
    """IDNA 2008 host name (the ideographic full stops separate labels too): U-labels and A-labels that ``idna``
    accepts, the bidi rule applied to every label of a domain with a right-to-left label, at most 253 octets."""
    import idna

    labels = re.split("[.\u3002\uff0e\uff61]", value)
    try:
        encoded = [idna.alabel(label) for label in labels]
        if any(unicodedata.bidirectional(c) in ("R", "AL", "AN") for c in value):  # a bidi domain name
            for label in labels:
                idna.check_bidi(label, check_ltr=True)
    except (idna.IDNAError, UnicodeError, ValueError, IndexError):
        return False
    return 0 < len(b".".join(encoded)) <= 253


def is_ipv4(value: str) -> bool:
    try:
        return value.isascii() and bool(ipaddress.IPv4Address(value))
    except ValueError:
        return False


def is_ipv6(value: str) -> bool:
    try:
        return value.isascii() and "%" not in value and bool(ipaddress.IPv6Address(value))
    except ValueError:
        return False


_ATEXT = "A-Za-z0-9!#$%&'*+/=?^_`{|}~"  # and "-", last in the class
_QUOTED = r'"(?:[\x20\x21\x23-\x5b\x5d-\x7e{utf8}]|\\[\x20-\x7e])*"'
_DOT_ATOM = r"[{atext}{utf8}-]+(?:\.[{atext}{utf8}-]+)*"
_LOCAL_ASCII = re.compile(f"(?:{_DOT_ATOM}|{_QUOTED})".format(atext=_ATEXT, utf8=""))
_LOCAL_UTF8 = re.compile(f"(?:{_DOT_ATOM}|{_QUOTED})".format(atext=_ATEXT, utf8="\\x80-\\U0010ffff"))


def _email(value: str, local_rx: re.Pattern[str], host: Callable[[str], bool]) -> bool:
    local, at, domain = value.rpartition("@")
    if not at or not local_rx.fullmatch(local):
        return False
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        return is_ipv6(literal[5:]) if literal[:5].lower() == "ipv6:" else is_ipv4(literal)
    return host(domain)


def is_email(value: str) -> bool:
    return _email(value, _LOCAL_ASCII, is_hostname)


def is_idn_email(value: str) -> bool:
    return _email(value, _LOCAL_UTF8, lambda d: is_hostname(d) or is_idn_hostname(unicodedata.normalize("NFC", d)))


_UCS = "\xa0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef" + "".join(
    f"{chr(plane << 16)}-{chr((plane << 16) + 0xFFFD)}" for plane in range(1, 15)
)
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"


@lru_cache(maxsize=4)
def _uri_rx(iri: bool, relative: bool) -> re.Pattern[str]:
    """RFC 3986 URI (or URI-reference), widened to RFC 3987 when ``iri``; the host is group ``h`` (or ``r``)."""
    ext = _UCS if iri else ""
    pct, unres, sub = "%[0-9A-Fa-f]{2}", f"A-Za-z0-9._~\\-{ext}", "!$&'()*+,;="
    pchar = f"(?:[{unres}{sub}:@]|{pct})"
    userinfo = f"(?:(?:[{unres}{sub}:]|{pct})*@)?"
    host = rf"\[[^\]]*\]|(?:[{unres}{sub}]|{pct})*"
    abempty = f"(?:/{pchar}*)*"
    absolute = f"/(?:{pchar}+{abempty})?"
    query = f"(?:\\?(?:{pchar}|[/?{_PRIVATE if iri else ''}])*)?(?:#(?:{pchar}|[/?])*)?"
    full = f"[A-Za-z][A-Za-z0-9+.-]*:(?://{userinfo}(?P<h>{host})(?::[0-9]*)?{abempty}|{absolute}|{pchar}+{abempty}|)"
    if relative:
        noscheme = f"(?:[{unres}{sub}@]|{pct})+{abempty}"
        rel = f"(?://{userinfo}(?P<r>{host})(?::[0-9]*)?{abempty}|{absolute}|{noscheme}|)"
        full = f"(?:{full}|{rel})"
    return re.compile(full + query)


def _uri(iri: bool, relative: bool) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        m = _uri_rx(iri, relative).fullmatch(value)
        host = (m.group("h") or (m.group("r") if relative else "") or "") if m else ""
        if not host.startswith("["):
            return m is not None
        literal = host[1:-1]
        future = re.fullmatch(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9._~!$&'()*+,;=:-]+", literal, re.ASCII)
        return future is not None or is_ipv6(literal)

    return check


_VARNAME = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})(?:\.?(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2}))*"
_HEX2 = "%[0-9A-Fa-f][0-9A-Fa-f]"
_VARSPEC = _VARNAME + r"(?::[1-9][0-9]?[0-9]?[0-9]?|\*)?"
_LITERAL = r"[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e" + _UCS + _PRIVATE + "]|" + _HEX2
_EXPRESSION = r"\x7b[+#./;?&=,!@|]?" + _VARSPEC + "(?:," + _VARSPEC + r")*\x7d"  # { ... }
is_uri_template = _full(f"(?:{_LITERAL}|{_EXPRESSION})*", 0)
_POINTER = r"(?:/(?:[^/~]|~[01])*)*"
is_json_pointer = _full(_POINTER, re.DOTALL)
is_relative_json_pointer = _full(rf"(?:0|[1-9][0-9]*)(?:[+-][1-9][0-9]*)?(?:#|{_POINTER})", re.DOTALL)
is_uuid = _full(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")

FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": is_date_time,
    "date": is_date,
    "time": is_time,
    "duration": is_duration,
    "email": is_email,
    "idn-email": is_idn_email,
    "hostname": is_hostname,
    "idn-hostname": is_idn_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "uri": _uri(iri=False, relative=False),
    "uri-reference": _uri(iri=False, relative=True),
    "iri": _uri(iri=True, relative=False),
    "iri-reference": _uri(iri=True, relative=True),
    "uuid": is_uuid,
    "uri-template": is_uri_template,
    "json-pointer": is_json_pointer,
    "relative-json-pointer": is_relative_json_pointer,
    "regex": is_regex,
}


def check_format(name: str, value: object) -> bool:
    """Whether ``value`` satisfies format ``name`` (non-strings and unknown formats always do)."""
    check = FORMATS.get(name)
    return check is None or not isinstance(value, str) or check(value)
