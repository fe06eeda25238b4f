"""Vectorised parsing of numeric text files (edge lists, CSV, METIS), one block of lines at a time.

A compiled pass over the bytes blanks comment lines, turns the delimiter into a space and counts the
tokens of every line; numpy's C parser then reads all numbers of the block at once. Only when the
number count disagrees with the token count (a malformed token) does a slow per-line pass run, to
name the offending line.

A file may open with one header line of column names (`id_1,id_2`): with `header=True` the first
data line is skipped when none of its tokens is a number; a non-numeric token on any later line is
still an error naming that line. The delimiter may be named (`comma`, `tab`, `space`,
`semicolon`: a bare comma cannot be written on Hydra's command line) or follow from the suffix.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from gnnbench.data.sources._io import iter_line_blocks
from gnnbench.errors import ConfigError, DataError

_INTEGER = re.compile(rb"[+-]?\d+")
DELIMITER_NAMES = {"comma": ",", "tab": "\t", "space": " ", "semicolon": ";"}
_SUFFIX_DELIMITERS = {".csv": ",", ".tsv": "\t"}
_QUOTES = "\"'"


def data_suffix(path: Path) -> str:
    """The file's lower-case format suffix, looking through a trailing `.gz` (g.csv.gz → .csv)."""
    suffixes = [suffix.lower() for suffix in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def resolve_delimiter(value: object, path: Path, key: str = "dataset.delimiter") -> str | None:
    """The column delimiter of `path`: a name from DELIMITER_NAMES or one ASCII character; unset
    → `,` for .csv, tab for .tsv (also gzipped), else None (any whitespace)."""
    if value is None or value == "":
        return _SUFFIX_DELIMITERS.get(data_suffix(path))
    text = str(value)
    if text.lower() in DELIMITER_NAMES:
        return DELIMITER_NAMES[text.lower()]
    if len(text) != 1 or not text.isascii():
        names = ", ".join(DELIMITER_NAMES)
        raise ConfigError(f"{key}: expected one of {names} or one ASCII character, got {value!r}")
    return text


def _split_tokens(line: bytes, delimiter: str | None) -> list[str]:
    text = line.decode(errors="replace")
    parts = text.split(delimiter) if delimiter and not delimiter.isspace() else text.split()
    return [part.strip().strip(_QUOTES) for part in parts]


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _header_names(line: bytes, delimiter: str | None) -> list[str] | None:
    """The column names when no token of this line is a number, else None (a data line)."""
    tokens = _split_tokens(line, delimiter)
    filled = [token for token in tokens if token]
    if filled and not any(_is_number(token) for token in filled):
        return tokens
    return None


def _first_data_line(block: bytes, comment_chars: bytes) -> tuple[int, int] | None:
    """(start, end) byte offsets of the block's first line that is neither blank nor a comment."""
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end
        stripped = block[start:end].strip()
        if stripped and stripped[0] not in comment_chars:
            return start, end
        start = end + 1
    return None


def read_header(
    path: Path, delimiter: str | None, comment_chars: bytes = b"#%"
) -> list[str] | None:
    """Column names of the file's header line, or None when its first data line is numeric."""
    with closing(iter_line_blocks(path, 1 << 16)) as blocks:
        for _, block in blocks:
            span = _first_data_line(block, comment_chars)
            if span is not None:
                return _header_names(block[span[0] : span[1]], delimiter)
    return None


@numba.njit(cache=True, nogil=True)
def _is_space(byte: np.uint8) -> bool:
    return byte == 32 or (9 <= byte <= 13)


@numba.njit(cache=True, nogil=True)
def _scan_lines(buf, comment_chars, delimiter, counts, is_comment) -> None:
    """Per line: blank it if it is a comment, replace the delimiter by a space, count tokens."""
    line = 0
    position = 0
    size = buf.shape[0]
    while position < size:
        end = position
        while buf[end] != 10:
            end += 1
        first = position
        while first < end and _is_space(buf[first]):
            first += 1
        comment = False
        if first < end:
            for char in comment_chars:
                if buf[first] == char:
                    comment = True
        tokens = 0
        previous_space = True
        for k in range(position, end):
            if comment or buf[k] == delimiter:
                buf[k] = 32
            space = _is_space(buf[k])
            if previous_space and not space:
                tokens += 1
            previous_space = space
        counts[line] = tokens
        is_comment[line] = comment
        line += 1
        position = end + 1


@dataclass
class ParsedBlock:
    """The numbers of one block of lines, with the token count and comment flag of every line."""

    first_line: int
    values: np.ndarray
    counts: np.ndarray
    is_comment: np.ndarray

    def line_starts(self) -> np.ndarray:
        """Index into `values` of the first token of every line."""
        return np.cumsum(self.counts) - self.counts


def parse_block(
    path: Path,
    first_line: int,
    block: bytes,
    dtype: np.dtype,
    comment_chars: bytes = b"#%",
    delimiter: str | None = None,
) -> ParsedBlock:
    """Parse every number of a block of whole lines; a malformed token → DataError naming its line."""
    buf = np.frombuffer(bytearray(block), dtype=np.uint8)
    num_lines = int(np.count_nonzero(buf == 10))
    counts = np.empty(num_lines, dtype=np.int64)
    is_comment = np.empty(num_lines, dtype=np.bool_)
    delimiter_byte = ord(delimiter) if delimiter and not delimiter.isspace() else 32
    comments = np.frombuffer(comment_chars, dtype=np.uint8)
    _scan_lines(buf, comments, delimiter_byte, counts, is_comment)
    text = buf.tobytes()
    values = _fromstring(text, dtype) if counts.sum() else np.empty(0, dtype=dtype)
    if values is None or len(values) != counts.sum():
        _raise_bad_token(path, first_line, text, block, dtype)
    parsed = ParsedBlock(first_line, values, counts, is_comment)
    if np.issubdtype(dtype, np.integer):
        _check_no_overflow(path, parsed)
    return parsed


def _check_no_overflow(path: Path, parsed: ParsedBlock) -> None:
    """numpy clamps integers too large for the dtype to its limits: treat the limits as overflow."""
    limits = np.iinfo(parsed.values.dtype)
    clamped = (parsed.values == limits.max) | (parsed.values == limits.min)
    if clamped.any():
        line = line_of_value(parsed, int(np.argmax(clamped)))
        raise DataError(f"{path}: line {line}: integer out of range for {limits.dtype.name}")


def _fromstring(text: bytes, dtype: np.dtype) -> np.ndarray | None:
    """numpy's C number parser; None when it stops early on a malformed token."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:
            return np.fromstring(text, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            return None


def _raise_bad_token(
    path: Path, first_line: int, text: bytes, original: bytes, dtype: np.dtype
) -> None:
    """Slow path, only on error: find the first line holding a token that is not a number.

    `text` is the block after comment blanking and delimiter replacement; `original` is shown.
    """
    integer = np.issubdtype(dtype, np.integer)
    for offset, line in enumerate(text.split(b"\n")):
        for token in line.split():
            if not _token_ok(token, integer):
                shown = original.split(b"\n")[offset].strip().decode(errors="replace")[:80]
                kind = "integers" if integer else "numbers"
                raise DataError(
                    f"{path}: line {first_line + offset}: expected {kind}, found {shown!r}"
                )
    last = first_line + text.count(b"\n") - 1
    raise DataError(f"{path}: lines {first_line}-{last}: malformed numbers")


def _token_ok(token: bytes, integer: bool) -> bool:
    if integer:
        return _INTEGER.fullmatch(token) is not None
    try:
        float(token)
    except ValueError:
        return False
    return b"_" not in token


def iter_parsed_blocks(
    path: Path,
    dtype: np.dtype,
    comment_chars: bytes = b"#%",
    delimiter: str | None = None,
    header: bool = False,
) -> Iterator[ParsedBlock]:
    """Parsed blocks of a whole file (plain or gzip), streamed; `header`: see the module doc."""
    header_pending = header
    for first_line, block in iter_line_blocks(path):
        if header_pending:
            block, header_pending = _blank_header(block, delimiter, comment_chars)
        yield parse_block(path, first_line, block, dtype, comment_chars, delimiter)


def _blank_header(block: bytes, delimiter: str | None, comment_chars: bytes) -> tuple[bytes, bool]:
    """Blank the block's first data line if it is a header (line numbers stay right); the bool
    says whether the first data line is still to come (the block held none)."""
    span = _first_data_line(block, comment_chars)
    if span is None:
        return block, True
    start, end = span
    if _header_names(block[start:end], delimiter) is None:
        return block, False
    return block[:start] + b" " * (end - start) + block[end:], False


def iter_table(
    path: Path,
    dtype: np.dtype,
    what: str,
    delimiter: str | None = None,
    min_columns: int = 1,
    comment_chars: bytes = b"#%",
    header: bool = False,
) -> Iterator[np.ndarray]:
    """Row blocks (k, C) of a numeric table; blank and comment lines (and a header) skipped.

    C is the column count of the first data line; every other line must have as many. `what`
    describes one row for error messages (e.g. "2 integer node ids").
    """
    columns = None
    for parsed in iter_parsed_blocks(path, dtype, comment_chars, delimiter, header):
        data_lines = parsed.counts > 0
        if not data_lines.any():
            continue
        if columns is None:
            columns = int(parsed.counts[data_lines][0])
            if columns < min_columns:
                _raise_bad_row(path, parsed, int(np.argmax(data_lines)), what)
        wrong = data_lines & (parsed.counts != columns)
        if wrong.any():
            _raise_bad_row(path, parsed, int(np.argmax(wrong)), what)
        yield parsed.values.reshape(-1, columns)


def read_int_column(path: Path, what: str) -> np.ndarray:
    """A small one-column integer file (node ids, counts) as a 1-D int64 array."""
    blocks = [rows for rows in iter_table(path, np.int64, what)]
    for rows in blocks:
        if rows.shape[1] != 1:
            raise DataError(f"{path}: expected {what}, found {rows.shape[1]} columns")
    return np.concatenate(blocks).reshape(-1) if blocks else np.empty(0, dtype=np.int64)


def _raise_bad_row(path: Path, parsed: ParsedBlock, line_index: int, what: str) -> None:
    start = int(parsed.line_starts()[line_index])
    tokens = parsed.values[start : start + int(parsed.counts[line_index])]
    shown = " ".join(str(value) for value in tokens[:10])
    raise DataError(
        f"{path}: line {parsed.first_line + line_index}: expected {what}, found '{shown}'"
    )


def line_of_value(parsed: ParsedBlock, value_index: int) -> int:
    """File line number holding the value at `value_index` of a parsed block."""
    line_index = int(np.searchsorted(np.cumsum(parsed.counts), value_index, side="right"))
    return parsed.first_line + line_index
