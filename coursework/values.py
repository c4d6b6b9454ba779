"""``check_values``: what a check cell hands to the grader, and how the grader compares it.

Every check cell assigns ``check_values``, a dict of plain values (numbers, lists or numpy arrays
of numbers; keys are short names) computed from the student's answer on fixed inputs
(CONVENTIONS section 4).  The grader never trusts what happens inside the student's kernel:

1. in the kernel, right after the check cell ran without error, the runner evaluates
   :func:`dumps` on ``check_values`` and receives a JSON text (this module is imported there; a
   hostile kernel may replace it, so whatever arrives is treated as untrusted data);
2. in the grader's own process, :func:`loads` parses that text defensively (size and shape
   limits, numbers only, never unpickled or evaluated) and :func:`compare` compares it with the
   instructor's values, obtained the same way from the instructor's notebook, with the check
   cell's tolerances.

A value matches when it has the same keys and shapes and, elementwise,
``|got - expected| <= atol + rtol * |expected|`` (or both are the same infinity); NaN never
matches.
"""

from __future__ import annotations

import json
import math

MAX_KEYS = 64
MAX_NDIM = 8
MAX_ELEMENTS = 1_000_000
MAX_TEXT = 8_000_000  # characters of JSON text per check cell


class MalformedValues(ValueError):
    """The text is not a valid encoding of ``check_values``."""


class _JSONText(str):
    """A str that IPython shows as itself (so ``user_expressions`` carry the JSON text verbatim)."""

    def __repr__(self):
        return str(self)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def dumps(values):
    """Encode ``check_values`` (kernel side) as JSON text: ``{key: {"shape": [...], "data": [...]}}``
    with the data flattened in C order and converted to float.

    >>> print(dumps({"t": 0.25, "g": [[1, 2], [3, 4]]}))
    {"t": {"shape": [], "data": [0.25]}, "g": {"shape": [2, 2], "data": [1.0, 2.0, 3.0, 4.0]}}
    """
    import numpy as np

    if not isinstance(values, dict):
        raise TypeError(f"check_values must be a dict of numbers or arrays, got {type(values).__name__}")
    out = {}
    for key, value in values.items():
        if not isinstance(key, str):
            raise TypeError(f"check_values keys must be strings, got {key!r}")
        arr = np.asarray(value)
        if arr.dtype.kind not in "biuf":
            raise TypeError(
                f"check_values[{key!r}] must be a number or an array of numbers, "
                f"got {type(value).__name__} (dtype {arr.dtype})"
            )
        out[key] = {"shape": list(arr.shape), "data": arr.astype(float).ravel().tolist()}
    return _JSONText(json.dumps(out))


def _number(x):
    if type(x) is float or type(x) is int:  # not bool, not a subclass
        return float(x)
    raise MalformedValues(f"expected a number, got {type(x).__name__}")


def loads(text):
    """Parse the JSON text of :func:`dumps` (grader side) into ``{key: (shape, tuple_of_floats)}``.

    Raises :class:`MalformedValues` for anything that is not exactly that: too long, nested too
    deeply, not a dict, more than 64 keys, shapes that are not short lists of non-negative ints,
    data that are not numbers or do not fill the shape, more than a million numbers.
    """
    if not isinstance(text, str):
        raise MalformedValues(f"expected JSON text, got {type(text).__name__}")
    if len(text) > MAX_TEXT:
        raise MalformedValues(f"longer than {MAX_TEXT} characters")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MalformedValues(f"not valid JSON ({type(exc).__name__})") from None
    if not isinstance(obj, dict):
        raise MalformedValues(f"expected a dict, got {type(obj).__name__}")
    if len(obj) > MAX_KEYS:
        raise MalformedValues(f"more than {MAX_KEYS} keys")
    out, total = {}, 0
    for key, entry in obj.items():
        if not isinstance(entry, dict) or set(entry) != {"shape", "data"}:
            raise MalformedValues(f"entry {key[:40]!r} is not {{shape, data}}")
        shape, data = entry["shape"], entry["data"]
        if (
            not isinstance(shape, list)
            or len(shape) > MAX_NDIM
            or not all(type(n) is int and 0 <= n <= MAX_ELEMENTS for n in shape)
        ):
            raise MalformedValues(f"entry {key[:40]!r} has an invalid shape")
        size = math.prod(shape)
        if not isinstance(data, list) or len(data) != size:
            raise MalformedValues(f"entry {key[:40]!r}: the data do not fill the shape")
        total += size
        if total > MAX_ELEMENTS:
            raise MalformedValues(f"more than {MAX_ELEMENTS} numbers")
        out[key] = (tuple(shape), tuple(_number(x) for x in data))
    return out


def text_bound(expected):
    """The most characters the JSON text of values shaped like ``expected`` (a result of
    :func:`loads`) can take, with room to spare: 32 per number, 64 per key and dimension.  A
    longer text cannot match, so the grader refuses it without parsing it (a hostile kernel
    may hand over megabytes for every check cell of a class).

    >>> text_bound(loads(dumps({"t": 0.25, "g": [[1, 2], [3, 4]]}))) >= len(dumps({"t": -1e-300, "g": [[1e300] * 2] * 2}))
    True
    """
    return 1024 + sum(64 * (2 + len(key) + len(shape)) + 32 * len(data) for key, (shape, data) in expected.items())


def _close(g, e, rtol, atol):
    if math.isnan(g) or math.isnan(e):
        return False
    if math.isinf(g) or math.isinf(e):
        return g == e
    return abs(g - e) <= atol + rtol * abs(e)


def compare(expected, got, rtol, atol):
    """Compare two results of :func:`loads`; return ``None`` when they match, else a sentence
    saying what differs (names the key, never the expected number)."""
    missing = [k for k in expected if k not in got]
    extra = [k for k in got if k not in expected]
    if missing:
        return f"check_values has no {', '.join(repr(k) for k in missing[:5])}"
    if extra:
        return f"check_values has unexpected keys {', '.join(repr(k[:40]) for k in extra[:5])}"
    for key, (e_shape, e_data) in expected.items():
        g_shape, g_data = got[key]
        if g_shape != e_shape:
            return f"check_values[{key!r}] has shape {g_shape}, expected {e_shape}"
        bad = [i for i, (g, e) in enumerate(zip(g_data, e_data)) if not _close(g, e, rtol, atol)]
        if bad:
            g, e = g_data[bad[0]], e_data[bad[0]]
            where = f"[{bad[0]}]" if e_shape else ""
            if math.isnan(g):
                what = "is NaN"
            else:
                rel = abs(g - e) / abs(e) if e and math.isfinite(g - e) else float("inf")
                what = f"differs (relative difference {rel:.1e})"
            return f"check_values[{key!r}]{where} {what}, tolerance rtol={rtol:g}, atol={atol:g}" + (
                f"; {len(bad)} of {len(e_data)} entries differ" if len(e_data) > 1 else ""
            )
    return None
