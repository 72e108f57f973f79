"""The tokenizer of MRQA 2019's released files, re-implemented with ``re`` (no spaCy).

MRQA's ``context_tokens`` and ``question_tokens`` are ``[token, char_offset]``
pairs from spaCy 2.0's English tokenizer.  This module reproduces that
tokenizer's algorithm and the rules of that version, as read off the official
SQuAD dev file (``mrqa-squad-dev/SQuAD.jsonl.gz``), where it gives the same
tokens for all 2,067 contexts and all 10,507 questions
(``tests/scoring/test_mrqa_build.py`` measures it):

* the text is split on single spaces; any other white space run (a second
  space, a line break) is a token of its own, as in spaCy;
* each chunk loses prefixes and suffixes one at a time, checking the special
  cases (contractions, abbreviations, emoticons) before each step, and what is
  left is split at infixes;
* the rules are spaCy 2.0's with the differences the official file shows:
  the hyphen infix splits only between two letters (``gold-themed`` splits,
  ``11-year``, ``1641–1679`` and ``"teleautomaton"—to`` do not), ``/`` splits
  between letters (``HIV/AIDS``; ``and/or`` is a special case), and a final
  ``.`` after ``]`` stays attached (``needed].``).

Context tokens leave the white space tokens out; question tokens keep them,
as the official file does (``[" ", 33]`` in ``"Cotchery  get"``).

spaCy's letter classes are Unicode categories; here they are the letters of
the Basic Multilingual Plane below U+3000 (Latin, Greek, Cyrillic and the
rest of the alphabetic scripts), enough for English text with foreign names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

Token = tuple[str, int]

# --------------------------------------------------------------------------- character classes


def _char_class(accept: Callable[[str], bool], below: int) -> str:
    """The code points below ``below`` that ``accept`` takes, as ranges for a ``[...]`` class.

    Ranges, not one escaped character each: ``re`` scans a class of a
    thousand single characters linearly, which made tokenizing 10 times slower.
    """
    points = [cp for cp in range(below) if accept(chr(cp))]
    parts: list[str] = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        first = re.escape(chr(points[i]))
        parts.append(first if i == j else f"{first}-{re.escape(chr(points[j]))}")
        i = j + 1
    return "".join(parts)


def _escaped(items: list[str]) -> list[str]:
    return [re.escape(item) for item in items]


_LOWER = _char_class(lambda c: c.isalpha() and c.islower(), 0x3000)
_UPPER = _char_class(lambda c: c.isalpha() and c.isupper(), 0x3000)
_ALPHA = _LOWER + _UPPER
# spaCy's ICONS: "other symbols" (°, ©, ™, arrows...).
_ICON_CHARS = _char_class(lambda c: unicodedata.category(c) == "So", 0x20000)
_ICONS = f"[{_ICON_CHARS}]"

_QUOTES = ["'", "''", '"', "”", "“", "``", "`", "‘", "´", "’", "‚", ",", "„", "»", "«",
           "「", "」", "『", "』", "（", "）", "〔", "〕", "【", "】", "《", "》", "〈", "〉"]
_PUNCT = ["…", ",", ":", ";", "!", "?", "¿", "¡", "(", ")", "[", "]", "{", "}", "<", ">", "_", "#", "*", "&"]
_ELLIPSES = [r"\.\.+", "…"]
_CURRENCY = ["$", "£", "€", "¥", "฿", "US$", "C$", "A$"]
_UNITS = ("km km² km³ m m² m³ dm dm² dm³ cm cm² cm³ mm mm² mm³ ha µm nm yd in ft kg g mg µg t lb oz "
          "m/s km/h kmh mph hPa Pa mbar mb MB kb KB gb GB tb TB T G M K %").split()
_HYPHENS = ["---", "--", "——", "-", "–", "—", "~"]

# spaCy formats its quote list, joined by "|" inside "(?:...)", into a character class, so
# "(", "?", ":" and "|" end up in the class too: "award?." splits into "award", "?", ".".
_BEFORE_FINAL_PERIOD = "0-9" + _LOWER + re.escape("%²-)+") + re.escape("".join(sorted(set("".join(_QUOTES))))) + re.escape("(?:|")

_PREFIXES = ["§", "%", "=", r"\+(?![0-9])", *_escaped(_PUNCT), *_ELLIPSES, *_escaped(_QUOTES), *_escaped(_CURRENCY), _ICONS]
_SUFFIXES = [
    *_escaped(_PUNCT), *_ELLIPSES, *_escaped(_QUOTES), _ICONS, "'s", "'S", "’s", "’S",
    r"(?<=[0-9])\+",
    r"(?<=°[FfCcKk])\.",
    rf"(?<=[0-9])(?:{'|'.join(_escaped(_CURRENCY))})",
    rf"(?<=[0-9])(?:{'|'.join(_escaped(_UNITS))})",
    rf"(?<=[{_BEFORE_FINAL_PERIOD}])\.",
    rf"(?<=[{_UPPER}][{_UPPER}])\.",
]
_INFIXES = [
    *_ELLIPSES, _ICONS,
    r"(?<=[0-9])[+\-\*^](?=[0-9-])",
    rf"(?<=[{_LOWER}])\.(?=[{_UPPER}])",
    rf"(?<=[{_ALPHA}]),(?=[{_ALPHA}])",
    rf"(?<=[{_ALPHA}])(?:{'|'.join(_escaped(_HYPHENS))})(?=[{_ALPHA}])",
    rf"(?<=[{_ALPHA}])[:<>=/](?=[{_ALPHA}])",
]
_PREFIX = re.compile("|".join(_PREFIXES))  # used with .match: spaCy anchors each with "^"
_SUFFIX = re.compile("|".join(f"(?:{s})$" for s in _SUFFIXES))
_INFIX = re.compile("|".join(_INFIXES))
# A chunk without any of these characters has no infix: skip the slow scan.
_INFIX_CHARS = re.compile(f"[{_ICON_CHARS}{re.escape('.…+-*^,–—~:<>=/')}]")
# No suffix but "\.\.+" is longer than this, so the search can start near the end.
_LONGEST_SUFFIX = 8

# --------------------------------------------------------------------------- special cases

_EMOTICONS = r"""
:) :-) :)) :-)) :))) :-))) (: (-: =) (= ") :] :-] [: [-: :o) (o: :} :-} 8) 8-) (-8 ;) ;-) (; (-;
:( :-( :(( :-(( :((( :-((( ): )-: =( >:( :') :'-) :'( :'-( :/ :-/ =/ =| :| :-| :1 :P :-P :p :-p
:O :-O :o :-o :0 :-0 :() >:o :* :-* :3 :-3 =3 :> :-> :X :-X :x :-x :D :-D ;D ;-D =D xD XD xDD XDD
8D 8-D ^_^ ^__^ ^___^ >.< >.> <.< ._. ;_; -_- -__- v.v V.V v_v V_V o_o o_O O_o O_O 0_o o_0 0_0 o.O
O.o O.O o.o 0.0 o.0 0.o @_@ <3 <33 <333 </3 (^_^) (-_-) (._.) (>_<) (*_*) (¬_¬) ಠ_ಠ ಠ︵ಠ (ಠ_ಠ)
¯\(ツ)/¯ (╯°□°）╯︵┻━┻ ><(((*>
""".split()

_ABBREVIATIONS = """
'd a.m. Adm. Bros. co. Co. Corp. D.C. Dr. e.g. E.g. E.G. Gen. Gov. i.e. I.e. I.E. Inc. Jr. Ltd. Md.
Messrs. Mo. Mont. Mr. Mrs. Ms. p.m. Ph.D. Rep. Rev. Sen. St. vs. Mt. Ak. Ala. Apr. Ariz. Ark. Aug.
Calif. Colo. Conn. Dec. Del. Feb. Fla. Ga. Ia. Id. Ill. Ind. Jan. Jul. Jun. Kan. Kans. Ky. La. Mar.
Mass. May. Mich. Minn. Miss. N.C. N.D. N.H. N.J. N.M. N.Y. Neb. Nebr. Nev. Nov. Oct. Okla. Ore. Pa.
S.C. Sep. Sept. Tenn. Va. Wash. Wis. and/or 'S 's ‘S ‘s 'Cause 'cause 'cos 'Cos 'coz 'Coz 'cuz 'Cuz
'bout ma'am Ma'am o'clock O'clock C++ '' ' \") —
""".split()


def _special_cases() -> dict[str, tuple[str, ...]]:
    """spaCy 2.0's English tokenizer exceptions: whole chunks and how they split."""
    cases: dict[str, tuple[str, ...]] = {}

    def both(orth: str, *parts: str) -> None:
        # spaCy adds each case in lower case and title case ("don't", "Don't").
        cases[orth] = parts
        cases[orth[0].upper() + orth[1:]] = (parts[0][0].upper() + parts[0][1:], *parts[1:])

    for orth in [*_EMOTICONS, *_ABBREVIATIONS, *(f"{c}." for c in "abcdefghijklmnopqrstuvwxyzäöü")]:
        cases[orth] = (orth,)
    for hour in range(1, 13):
        for period in ("a.m.", "am", "p.m.", "pm"):
            cases[f"{hour}{period}"] = (str(hour), period)
    both("i'm", "i", "'m")
    both("im", "i", "m")
    both("i'ma", "i", "'m", "a")
    both("ima", "i", "m", "a")
    for pron in ("i", "you", "he", "she", "it", "we", "they"):
        for tail in (("'ll",), ("ll",), ("'ll", "'ve"), ("ll", "ve"), ("'d",), ("d",), ("'d", "'ve"), ("d", "ve")):
            both(pron + "".join(tail), pron, *tail)
    for pron in ("i", "you", "we", "they"):
        both(pron + "'ve", pron, "'ve")
        both(pron + "ve", pron, "ve")
    for pron in ("you", "we", "they"):
        both(pron + "'re", pron, "'re")
        both(pron + "re", pron, "re")
    for pron in ("he", "she", "it"):
        both(pron + "'s", pron, "'s")
        both(pron + "s", pron, "s")
    for word in ("who", "what", "when", "where", "why", "how", "there", "that"):
        for tail in (("'s",), ("s",), ("'ll",), ("ll",), ("'ll", "'ve"), ("ll", "ve"), ("'re",), ("re",),
                     ("'ve",), ("ve",), ("'d",), ("d",), ("'d", "'ve"), ("d", "ve")):
            both(word + "".join(tail), word, *tail)
    for verb in ("ca", "could", "do", "does", "did", "had", "may", "might", "must", "need", "ought", "sha",
                 "should", "wo", "would"):
        for tail in (("n't",), ("nt",), ("n't", "'ve"), ("nt", "ve")):
            both(verb + "".join(tail), verb, *tail)
    for verb in ("could", "might", "must", "should", "would"):
        both(verb + "'ve", verb, "'ve")
        both(verb + "ve", verb, "ve")
    for verb in ("ai", "are", "is", "was", "were", "have", "has", "dare"):
        both(verb + "n't", verb, "n't")
        both(verb + "nt", verb, "nt")
    for word in ("doin", "goin", "nothin", "nuthin", "ol", "somethin"):
        both(word, word)
        both(word + "'", word + "'")
    for word in ("cause", "em", "ll", "nuff"):
        cases["'" + word] = ("'" + word,)
        cases[word] = (word,)
    for orth, parts in (("y'all", ("y'", "all")), ("yall", ("y", "all")), ("not've", ("not", "'ve")),
                        ("notve", ("not", "ve")), ("cannot", ("can", "not")), ("gonna", ("gon", "na")),
                        ("gotta", ("got", "ta")), ("let's", ("let", "'s"))):
        both(orth, *parts)
    # Ordinary words the rules above would split ("ill" = "i" + "ll").
    for word in ("Ill", "ill", "Its", "its", "Hell", "hell", "Shell", "shell", "Shed", "shed", "were", "Were",
                 "Well", "well", "Whore", "whore"):
        cases.pop(word, None)
    # Every case with a straight apostrophe also holds with a curly one ("shouldn’t").
    for orth, split in list(cases.items()):
        if "'" in orth:
            cases.setdefault(orth.replace("'", "’"), tuple(p.replace("'", "’") for p in split))
    return cases


_SPECIAL = _special_cases()

# --------------------------------------------------------------------------- the algorithm


def _suffix_length(chunk: str) -> int:
    # spaCy searches the whole chunk and takes the leftmost match; starting near the end
    # finds the same one unless a run of dots reaches back to where the search started.
    start = max(0, len(chunk) - _LONGEST_SUFFIX)
    found = _SUFFIX.search(chunk, start)
    if found is not None and start and found.start() == start:
        found = _SUFFIX.search(chunk)
    return found.end() - found.start() if found is not None else 0


def _split_infixes(chunk: str) -> list[str]:
    if not _INFIX_CHARS.search(chunk):
        return [chunk]
    pieces: list[str] = []
    position = 0
    for found in _INFIX.finditer(chunk):
        if found.start() == 0:  # an infix at the very start is no infix (spaCy skips it)
            continue
        if found.start() != position:
            pieces.append(chunk[position:found.start()])
        if found.end() != found.start():
            pieces.append(found.group())
        position = found.end()
    if position < len(chunk):
        pieces.append(chunk[position:])
    return pieces


def _chunk_tokens(chunk: str) -> tuple[str, ...]:
    """The tokens of a chunk without white space: spaCy's ``_split_affixes`` then ``_attach_tokens``."""
    special = _SPECIAL.get(chunk)
    if special is not None:
        return special
    prefixes: list[str] = []
    suffixes: list[str] = []
    rest = chunk
    last_length = -1
    while rest and len(rest) != last_length:
        if rest in _SPECIAL:
            break
        last_length = len(rest)
        found = _PREFIX.match(rest)
        prefix_length = found.end() if found is not None else 0
        if prefix_length and rest[prefix_length:] in _SPECIAL:
            prefixes.append(rest[:prefix_length])
            rest = rest[prefix_length:]
            break
        suffix_length = _suffix_length(rest)
        if suffix_length and rest[:-suffix_length] in _SPECIAL:
            suffixes.append(rest[-suffix_length:])
            rest = rest[:-suffix_length]
            break
        if prefix_length and suffix_length and prefix_length + suffix_length <= len(rest):
            prefixes.append(rest[:prefix_length])
            suffixes.append(rest[-suffix_length:])
            rest = rest[prefix_length:-suffix_length]
        elif prefix_length:
            prefixes.append(rest[:prefix_length])
            rest = rest[prefix_length:]
        elif suffix_length:
            suffixes.append(rest[-suffix_length:])
            rest = rest[:-suffix_length]
    middle: list[str] | tuple[str, ...] = []
    if rest:
        middle = _SPECIAL.get(rest) or _split_infixes(rest)
    return (*prefixes, *middle, *reversed(suffixes))


# Bounded: distinct chunks grow with the corpus; words repeat, so most lookups hit.
@lru_cache(maxsize=1 << 18)
def _chunk_offsets(chunk: str) -> tuple[Token, ...]:
    placed = []
    offset = 0
    for token in _chunk_tokens(chunk):
        placed.append((token, offset))
        offset += len(token)
    return tuple(placed)


_SPACE_RUN = re.compile(r"\s+")  # \s is str.isspace() for str patterns, as spaCy tests


def tokenize(text: str, *, keep_space: bool = False) -> list[Token]:
    """``[(token, char_offset), ...]`` as MRQA's files have them.

    ``keep_space=False`` gives context tokens (white space tokens left out),
    ``keep_space=True`` question tokens.
    """
    tokens: list[Token] = []
    position = 0
    for run in _SPACE_RUN.finditer(text):
        start, end = run.span()
        if start > position:
            tokens.extend((token, position + offset) for token, offset in _chunk_offsets(text[position:start]))
        # A single space after a word belongs to it; any other white space is a token
        # (all of it at the very start of the text, where there is no word before).
        if start and text[start] == " ":
            start += 1
        if keep_space and start < end:
            tokens.append((text[start:end], start))
        position = end
    if position < len(text):
        tokens.extend((token, position + offset) for token, offset in _chunk_offsets(text[position:]))
    return tokens
