"""Pattern-based redaction of call arguments before they are recorded (ADR-0035 call_log_args)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple, Protocol
from urllib.parse import unquote

from harness.gateway.evidence.args_cap import CappedArgs, cap_json
from harness.gateway.evidence.secret_patterns import MARKERS, PATTERNS, REDACTED

_SECRET_KEY = re.compile(
    r"(?i)(password|passwd|passphrase|(^|[_-])pass($|[_-])|pwd|secret|token|api[_-]?key|apikey|"
    r"auth(orization|entication)?($|[_-])|credential|private[_-]?key|access[_-]?key|cookie|^session$|"
    r"client[_-]?secret|bearer|[_-]key$)"
)
"""A key (JSON object key) whose string or number value is replaced whatever it looks like."""

_IDENTIFIER_KEY = re.compile(
    r"(?i).*(issue|project|epic|parent|label|sort|partition|primary|foreign|row|object|cache|"
    r"idempotency|group|field|column|attribute|property|item|record|entry|node|lookup|map|bucket|"
    r"hot|space|short(cut)?)[_-]?key|.*(page|continuation|next|prev(ious)?|sync|cursor|pagination|resume)"
    r"[_-]?token"
)
"""Keys the rule above matches that name an identifier, not a credential (``issue_key``,
``project_key``, ``nextPageToken``): their values are kept. Measured on the benign corpus of
:mod:`devtools.benign_args` (bench/redaction.py)."""


def secret_key(name: str) -> bool:
    """Whether a JSON object key names a credential (its value is replaced)."""
    return _SECRET_KEY.search(name) is not None and _IDENTIFIER_KEY.fullmatch(name) is None


_ASSIGNED_NAME = re.compile(
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|credential|private[_-]?key|"
    r"access[_-]?key|_key)$",
    re.IGNORECASE,
)
"""The end of NAME in ``NAME=value``, ``NAME: value``, ``"NAME": "value"`` (a JSON object inside a
string too): any prefix (``DB_PASSWORD``, ``GITHUB_TOKEN``, ``STRIPE_KEY``) ending in a secret word.
Such text is found from its ``=``/``:`` (few in prose), NAME read backwards from there, and the whole
replaced when :func:`secret_key` says NAME is a credential."""
_SEPARATOR = re.compile(r"[=:]")
_ASSIGNED_VALUE = re.compile(r"\s*(?:\"[^\"]*\"|'[^']*'|[^\s&,;\"'}]+)")
"""After ``=``: a quoted value, or one word (``NAME=value`` in a shell line or a query string)."""
_STATED_VALUE = re.compile(r"[ \t]*(?:\"[^\"]*\"|'[^']*'|[^\r\n\"']+)")
"""After ``:``: a quoted value, or the rest of the line up to a quote (``passphrase: correct horse
battery``, a header or a YAML line)."""
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")

_ASSIGNED_MARKERS = ("pass", "pwd", "secret", "token", "key", "credential")
_URL_CREDENTIALS = re.compile(r"://[^/\s:@]+:[^/\s@]+@")


_RUN_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_RUN_BYTES = bytes(ord("a") if byte in _RUN_CHARS else ord(" ") for byte in range(256))
_RUN = b"a" * 24
"""A run of 24+ base64/base64url/hex characters (16+ bytes decoded) is what an agent's encoded
secret looks like. Runs are found on the text translated to ``a``/space (cheaper than a regex
search for them), decoded, and redacted whole when the decoded text holds a
secret (a path or a hash decodes to bytes that are not text, and is kept)."""
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]+").fullmatch
_HEX_RUN = re.compile(r"[0-9A-Fa-f]+").fullmatch
_LAYOUT = str.maketrans("", "", "\n\r\t")
"""Checks of a whole run or text in one C call each, never a generator over its characters."""


def _runs(text: str) -> list[str]:
    """The encoded-looking runs of ``text``."""
    raw = text.encode()
    shape = raw.translate(_RUN_BYTES)
    start = shape.find(_RUN)
    runs: list[str] = []
    while start >= 0:
        end = shape.find(b" ", start)
        end = len(shape) if end < 0 else end
        while raw[end : end + 1] == b"=":  # base64 padding goes with its run
            end += 1
        runs.append(raw[start:end].decode("ascii"))
        start = shape.find(_RUN, end)
    return runs


_REPLACEMENT = "\ufffd"
_REPLACEMENT_UTF8 = _REPLACEMENT.encode()


def _as_text(raw: bytes) -> str:
    """Decoded bytes as text when they are printable UTF-8, else "" (not an encoded string).

    The decoding replaces bad bytes rather than raising (an exception costs more than the decoding
    of a 32-byte run); only a text that holds U+FFFD of its own is decoded once more, strictly.
    """
    text = raw.decode(errors="replace")
    if _REPLACEMENT in text and (_REPLACEMENT_UTF8 not in raw or not _strict_utf8(raw)):
        return ""
    return text if text.translate(_LAYOUT).isprintable() else ""


def _strict_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def _decodings(run: str) -> list[str]:
    """What an encoded-looking run may stand for, of hex, base64 and base64url: those that are text."""
    texts = []
    if len(run) % 2 == 0 and _HEX_RUN(run) and (text := _as_text(bytes.fromhex(run))):
        texts.append(text)
    # base64url where the run holds its two own characters, else base64 (without them both read it
    # alike: one decoding, not the same one twice)
    altchars = b"-_" if "-" in run or "_" in run else None
    if altchars is not None or _BASE64_RUN(run):
        try:
            decoded = base64.b64decode(run + "=" * (-len(run) % 4), altchars, validate=True)
        except (binascii.Error, ValueError):
            return texts
        if text := _as_text(decoded):
            texts.append(text)
    return texts


def _holds_secret(decoded: str) -> bool:
    return may_hold_secret(decoded) and redact_text(decoded) != decoded


_BENIGN_RUNS: dict[str, None] = {}
"""Encoded-looking runs seen lately whose decodings hold no secret (the same path, id or hash in call
after call): decoded and scanned once. The verdict depends on the run alone (fixed patterns), so
remembering it changes no outcome. A run that holds a secret or may be one (a marker of the patterns
in it) is never remembered: the daemon keeps no agent's secret; nor one longer than
:data:`_BENIGN_RUN` (rarely repeated). Cleared when full."""
_BENIGN_RUN = 256
_BENIGN_RUNS_HELD = 4096


def _run_holds_secret(run: str) -> bool:
    """Whether one of an encoded-looking run's decodings holds a secret."""
    if run in _BENIGN_RUNS:
        return False
    holds = any(_holds_secret(decoded) for decoded in _decodings(run.rstrip("=")))
    if not holds and len(run) <= _BENIGN_RUN and not may_hold_secret(run):  # nor a secret itself
        if len(_BENIGN_RUNS) >= _BENIGN_RUNS_HELD:
            _BENIGN_RUNS.clear()
        _BENIGN_RUNS[run] = None
    return holds


_NO_RUNS: frozenset[str] = frozenset()


def encoded_secrets(text: str) -> tuple[frozenset[str], bool]:
    """The runs of ``text`` whose decoding holds a secret, and whether a percent-escaped part may
    (then each string with escapes is checked decoded)."""
    runs = _NO_RUNS
    if len(text) >= len(_RUN):  # else too short to hold a run (the common small argument object)
        found = [run for run in _runs(text) if _run_holds_secret(run)]
        if found:
            runs = frozenset(found)
    percent = "%" in text and _PERCENT.search(text) is not None and _holds_secret(unquote(text))
    return runs, percent


class _Scan(NamedTuple):
    """Which pattern groups can match, decided once from a whole text (the arguments' JSON)."""

    url: bool
    patterns: tuple[tuple[re.Pattern[str], str], ...]
    assignments: bool
    encoded_runs: frozenset[str] = frozenset()
    percent: bool = False


def _scan_for(text: str, encoded: tuple[frozenset[str], bool] | None = None) -> _Scan:
    low = text.lower()
    runs, percent = encoded if encoded is not None else encoded_secrets(text)
    return _Scan(
        "://" in low,
        tuple((pattern, by) for markers, pattern, by in PATTERNS if any(marker in low for marker in markers)),
        any(marker in low for marker in _ASSIGNED_MARKERS),
        runs,
        percent,
    )


def redact_text(text: str, scan: _Scan | None = None) -> str:
    """Replace secret-looking substrings of a string (``scan``: decided from a text holding it)."""
    scan = scan or _scan_for(text)
    for run in scan.encoded_runs:
        text = text.replace(run, REDACTED)
    if scan.percent and "%" in text:
        unquoted = unquote(text)
        if unquoted != text and _holds_secret(unquoted):
            return redact_text(unquoted)  # scanned afresh: its markers were escaped
    if scan.url:
        text = _URL_CREDENTIALS.sub(f"://{REDACTED}@", text)
    for pattern, replacement in scan.patterns:
        text = pattern.sub(replacement, text)
    if scan.assignments:
        text = _redact_assignments(text)
    return text


def _redact_assignments(text: str) -> str:
    out: list[str] = []
    kept = 0
    for separator in _SEPARATOR.finditer(text):
        at = end = separator.start()
        if at < kept:
            continue
        while end > kept and text[end - 1] in " \t":
            end -= 1
        if end > kept and text[end - 1] in "\"'":
            end -= 1
        start = end
        while start > kept and text[start - 1] in _NAME_CHARS:
            start -= 1
        name = text[start:end]
        if not _ASSIGNED_NAME.search(name) or not secret_key(name):
            continue
        value = (_STATED_VALUE if text[at] == ":" else _ASSIGNED_VALUE).match(text, at + 1)
        if value is not None:
            out += (text[kept:start], REDACTED)
            kept = value.end()
    return "".join(out) + text[kept:] if out else text


def redact_value(value: Any, scan: _Scan | None = None) -> Any:
    """A copy of a JSON value with secret-named keys' values and secret-looking strings replaced
    (``scan``: decided once from the value's whole JSON text, else per string)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            shown = redact_text(k, scan) if isinstance(k, str) else k  # a secret may be the key itself
            while shown in out:  # two keys redacted alike stay two entries
                shown += "'"
            secret = not isinstance(v, bool) and v is not None and secret_key(k)
            out[shown] = REDACTED if secret else redact_value(v, scan)
        return out
    if isinstance(value, list):
        return [redact_value(v, scan) for v in value]
    if isinstance(value, str):
        return redact_text(value, scan)
    return value


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, check_circular=False)
_CANONICAL_C = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _CANONICAL.default, encode_basestring, None, ":", ",", True, False, True)
)
"""The C encoder ``_CANONICAL.encode`` builds on every call (with a closure), built once: the same
output (same encoder, same options) for half the cost of a small argument object."""


def canonical_json(arguments: Any) -> str:
    """The canonical JSON of interfaces.md: sorted keys, compact separators, UTF-8 kept."""
    if _CANONICAL_C is None:
        return _CANONICAL.encode(arguments)
    return "".join(_CANONICAL_C(arguments, 0))


def _trie_alternation(words: Sequence[str]) -> str:
    """A regex matching any of ``words``, alternatives grouped by their first character
    (``a(?:iza|kia|uth)|b(?:asic|earer)|…``): at a position, one branch per first character is
    tried, not one per word (half the cost of the flat alternation on short texts)."""
    rests: dict[str, list[str]] = {}
    for word in words:
        rests.setdefault(word[0], []).append(word[1:])
    branches = []
    for first, tails in sorted(rests.items()):
        if "" in tails:  # a word that is a prefix of the others: it alone decides
            branches.append(re.escape(first))
        elif len(tails) == 1:
            branches.append(re.escape(first + tails[0]))
        else:
            branches.append(f"{re.escape(first)}(?:{_trie_alternation(tails)})")
    return "|".join(branches)


_MARKER_SEARCH = re.compile(_trie_alternation(MARKERS)).search
_SHORT_TEXT = 96
"""Up to this length one regex search for any marker is faster than a substring test per marker;
beyond it the substring tests win (bench/README.md)."""


def may_hold_secret(text: str) -> bool:
    """False when no redaction pattern can match ``text`` (the common case, decided cheaply)."""
    low = text.lower()
    if len(low) <= _SHORT_TEXT:
        return _MARKER_SEARCH(low) is not None
    return any(marker in low for marker in MARKERS)


class SecretFinder(Protocol):
    """Finds the exact secret values the daemon holds (``known_secrets.KnownSecrets``)."""

    def found_in(self, text: str) -> bool:
        """Whether one occurs in ``text``."""
        ...

    def redact(self, text: str, marker: str) -> str:
        """``text`` with each occurrence replaced by ``marker``."""
        ...


def args_as_stored(
    arguments: Any, canonical: str | None = None, known: SecretFinder | None = None
) -> CappedArgs:
    """Arguments as stored under ``call_log_args = "redacted"``: redacted canonical JSON of at most
    4 KiB, still JSON when cut (``args_cap.cap_json``), and whether it was cut.

    Layers: the daemon's own secret values first (``known``, in any encoding), then secret-named
    keys and secret-looking strings; the cut comes last. ``canonical`` (the arguments' canonical
    JSON, if already made) lets the common case, nothing to redact, skip the walk: one scan of the
    text decides.
    """
    text = canonical if canonical is not None else canonical_json(arguments)
    if known is not None and known.found_in(text):
        arguments = json.loads(known.redact(text, REDACTED))
        text = canonical_json(arguments)
    encoded = encoded_secrets(text)
    if may_hold_secret(text) or encoded[0] or encoded[1]:
        arguments = redact_value(arguments, _scan_for(text, encoded))
        text = canonical_json(arguments)
    return cap_json(arguments, text, canonical_json)


def redacted_args(arguments: Any, canonical: str | None = None, known: SecretFinder | None = None) -> str:
    """The text of ``args_as_stored``."""
    return args_as_stored(arguments, canonical, known).text
