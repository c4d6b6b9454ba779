"""Student folder names: NFKC for the output, and flags for names an instructor could mistake
for another (leading or trailing spaces, mixed scripts, look-alike letters)."""

from __future__ import annotations

import unicodedata


# letters of other scripts drawn like Latin ones (Unicode's confusables, the common part)
_CONFUSABLE = str.maketrans(
    "аеорсуххіјѕԁԛԝһӏкмнвтАВЕКМНОРСТХУІЈЅ"
    "αοςνρτυικχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ01|ɡ",
    "aeorcyxxijsdqwhlkmhbtABEKMHOPCTXYIJS"
    "aocvptuikxeABEZHIKMNOPTYXolIg",
)


def skeleton(name):
    """What a name looks like: NFKC, look-alike letters of other scripts replaced by the Latin
    ones, case folded, ``l``/``I``/``1`` made one.

    >>> skeleton("Ada") == skeleton("\u0430da") == skeleton("\uff21da"), skeleton("Bob")
    (True, 'bob')
    """
    text = unicodedata.normalize("NFKC", name).translate(_CONFUSABLE).casefold()
    return text.replace("1", "l").replace("i", "l").replace("|", "l")


def _codepoints(name):
    return "".join(c if c.isascii() else f"<U+{ord(c):04X} {unicodedata.name(c, '?')}>" for c in name)


def name_flags(names):
    """``{name: sentence}`` for the student folder names an instructor must look at: leading or
    trailing spaces, letters of several scripts, or a name another folder's looks like (the
    same skeleton); each sentence spells the name's characters that are not ASCII."""
    out, by_skeleton = {}, {}
    for name in names:
        by_skeleton.setdefault(skeleton(name.strip()), []).append(name)
    for name in names:
        why = []
        if name != name.strip():
            why.append("has leading or trailing spaces")
        scripts = {unicodedata.name(c, "?").split()[0] for c in name if c.isalpha()}
        if len(scripts) > 1:
            why.append(f"mixes letters of {', '.join(sorted(scripts))}")
        alike = sorted(n for n in by_skeleton[skeleton(name.strip())] if n != name)
        if alike:
            why.append("looks like " + ", ".join(repr(_codepoints(n)) for n in alike))
        if why:
            out[name] = f"student folder {_codepoints(name)!r} " + "; ".join(why)
    return out


def display_names(names):
    """``{folder name: name in the output}``: NFKC (fullwidth letters, composed accents), unless
    two folders would then read the same; those keep their own spelling."""
    nfkc = {n: unicodedata.normalize("NFKC", n) for n in names}
    taken = {}
    for n, v in nfkc.items():
        taken.setdefault(v, []).append(n)
    return {n: (v if len(taken[v]) == 1 else n) for n, v in nfkc.items()}
