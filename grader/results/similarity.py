"""Fingerprints of Python answers, robust to renamed variables, reordered functions, changed comments
and whitespace: MOSS's method (Schleimer, Wilkerson, Aiken, "Winnowing", SIGMOD 2003), written here.

1. Normalise: Python's ``tokenize``; every name becomes ``N`` except keywords and attribute names
   after a dot (``torch.cdist`` stays ``N . cdist``: renaming a variable never renames an API);
   numbers become ``0``, strings ``S``; comments, blank lines and indentation are dropped.
2. Split into units: each top-level ``def``/``class`` is one unit, the other statements one more;
   k-grams never cross units, so the answer's fingerprints are a *set* over its functions and
   their order does not matter.
3. Winnow: hash every k-gram of tokens, keep the smallest hash of each window of w hashes.

    fp = fingerprint(source)          # Fingerprint(hashes: {hash: [(first line, last line)]}, tokens: int)
    weighted_jaccard(a.hashes, b.hashes, weight)
"""
from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
import zlib
from dataclasses import dataclass, field

__all__ = ["K", "WINDOW", "Fingerprint", "normalise", "units", "fingerprint", "weighted_jaccard", "containment"]

K = 5        # tokens per k-gram: shorter matches are noise (MOSS uses k of a similar size for tokens)
WINDOW = 4   # winnowing window: any shared run of K + WINDOW - 1 = 8 tokens is always detected
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
        tokenize.ENCODING, tokenize.ENDMARKER}
MARKERS = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$", re.M)


@dataclass
class Fingerprint:
    hashes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # hash -> [(first, last) line], 1-based
    tokens: int = 0                                                    # normalised tokens in the answer


def normalise(source: str, first_line: int = 1) -> list[tuple[str, int]]:
    """(normalised token, its source line) for each kept token. Code that does not tokenize (a
    syntax error) falls back to words and symbols, normalised the same way."""
    out: list[tuple[str, int]] = []
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in SKIP:
                continue
            out.append((_norm(tok.type, tok.string, previous), tok.start[0] + first_line - 1))
            previous = tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = []
        for line_no, line in enumerate(source.splitlines(), first_line):
            code = line.split("#", 1)[0]
            for word in re.findall(r"[A-Za-z_]\w*|\d+(?:\.\d*)?|\S", code):
                kind = tokenize.NAME if re.match(r"[A-Za-z_]", word) else tokenize.NUMBER if word[0].isdigit() else tokenize.OP
                out.append((_norm(kind, word, previous), line_no))
                previous = word
    return out


def _norm(kind: int, text: str, previous: str) -> str:
    if kind == tokenize.NAME:
        return text if keyword.iskeyword(text) or previous == "." else "N"
    if kind == tokenize.NUMBER:
        return "0"
    if kind == tokenize.STRING or tokenize.tok_name.get(kind, "").startswith("FSTRING"):
        return "S"  # an f-string's parts all become S
    return text


def units(source: str) -> list[tuple[str, int]]:
    """(code, first line) of each top-level function or class, then the rest; the whole source as
    one unit when it does not parse."""
    source = MARKERS.sub("", source)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [(source, 1)]
    lines = source.splitlines(keepends=True)
    found, rest = [], []
    for node in tree.body:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = "".join(lines[start - 1:node.end_lineno])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((text, start))
        else:
            rest.append((text, start))
    if rest:  # the loose statements keep their own lines, joined into one unit
        found.append(("".join(t for t, _ in rest), rest[0][1]))
    return found


def _hash(tokens: list[str]) -> int:
    return zlib.crc32("\x1f".join(tokens).encode("utf-8"))


def fingerprint(source: str) -> Fingerprint:
    """The winnowed k-gram hashes of ``source``, each with the source lines it covers."""
    result = Fingerprint()
    for code, start in units(source):
        toks = normalise(code)
        # lines are relative to the unit's text; shift to the answer's lines
        toks = [(t, line + start - 1) for t, line in toks]
        result.tokens += len(toks)
        grams = [(_hash([t for t, _ in toks[i:i + K]]), toks[i][1], toks[i + K - 1][1])
                 for i in range(len(toks) - K + 1)]
        if not grams:
            continue
        for i in range(max(1, len(grams) - WINDOW + 1)):
            h, first, last = min(grams[i:i + WINDOW], key=lambda g: g[0])
            spans = result.hashes.setdefault(h, [])
            if (first, last) not in spans:
                spans.append((first, last))
    return result


def weighted_jaccard(a: dict, b: dict, weight: dict[int, float]) -> float:
    """Sum of the weights of the shared hashes over the weights of all hashes of either (0..1)."""
    shared = a.keys() & b.keys()
    union = a.keys() | b.keys()
    whole = sum(weight.get(h, 1.0) for h in union)
    return sum(weight.get(h, 1.0) for h in shared) / whole if whole else 0.0


def containment(part: dict, whole: dict) -> float:
    """The share of ``part``'s hashes that ``whole`` holds too (0..1)."""
    return len(part.keys() & whole.keys()) / len(part) if part else 0.0
