"""The signed results stream between the runner (in the sandbox) and the grader: each line is
``b"<hmac> <json>"``, the HMAC-SHA256 under a key only the runner and the grader hold (given on
a pipe the notebook's code cannot read), over the line's number and its JSON; :func:`verify`
stops at the first line that is not exactly the next signed record."""

from __future__ import annotations

import hashlib
import hmac
import json


def sign(key, seq, text):
    return hmac.new(key, f"{seq}:".encode() + text, hashlib.sha256).hexdigest()


def verify(lines, key):
    """``(records, problem)``: the records of signed lines ``b"<hmac> <json>"``, in order; the
    first line that is not exactly the next signed record makes ``problem`` a sentence."""
    records = []
    for seq, line in enumerate(lines):
        mac, _, text = line.partition(b" ")
        if not hmac.compare_digest(mac, sign(key, seq, text).encode()):
            return (
                records,
                f"the results stream was tampered with (line {seq + 1} is not signed by the runner)",
            )
        try:
            rec = json.loads(text)
        except (ValueError, RecursionError):
            return records, f"the results stream has a malformed line {seq + 1}"
        if not isinstance(rec, dict):
            return records, f"the results stream has a malformed line {seq + 1}"
        records.append(rec)
    return records, None
