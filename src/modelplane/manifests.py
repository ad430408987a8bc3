"""Reading manifests from PATHs (docs/api.md "The steps"): the shell around api.validation.

Files and directories (searched recursively for ``*.yaml``, ``*.yml``, ``*.json``
in byte-wise sorted path order), multi-document YAML, JSON files holding one
object or an array of objects. Every document remembers its file and the line
it starts on; every problem comes out as the one line ``validate`` prints.
A YAML file is read by :mod:`modelplane.fastyaml` where it can prove it reads what
PyYAML reads, and by PyYAML (``read_yaml_located``) everywhere else.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from modelplane import fastyaml
from modelplane.api.base import KubeModel
from modelplane.api.kinds import KIND_BY_NAME, KindInfo
from modelplane.api.openapi import Schema, validator_schema
from modelplane.api.validation import Problem, ValidationResult, validate_document
from modelplane.errors import ModelplaneError
from modelplane.fieldpath import Keys, field_path
from modelplane.jsonvalues import (
    ALIAS_SLACK,
    INT64,
    MAX_DEPTH,
    JsonValues,
    TooLarge,
    json_object,
    json_problems,
    nests_past,
)
from modelplane.printable import printable

EXTENSIONS = (".yaml", ".yml", ".json")
MIB = 1024 * 1024
MAX_FILE_BYTES = 64 * MIB
"""The largest file read (a whole-fleet snapshot of the benchmarks is 14 MB)."""
MAX_TOTAL_BYTES = 256 * MIB
"""The most one command reads across all its PATHs: four files at the per-file limit."""

M = TypeVar("M", bound=KubeModel)


class PathError(ModelplaneError):
    """A PATH argument that names nothing (a usage error, exit 2)."""


@dataclass(frozen=True)
class Document:
    """One parsed document and where it came from."""

    file: str
    line: int
    content: Any
    problems: tuple[tuple[Keys, str], ...] = ()
    """(keys, message) of every value that is not JSON (jsonvalues); the path is written
    from the keys with the kind's schema when the problem is reported (fieldpath)."""
    null_free: bool = False
    """The reader knows no object of the content has a null member (fastyaml.FastRead)."""
    result: ValidationResult | None = None
    """The content validated already (in place) while the rest of its file was being read."""


@dataclass(frozen=True)
class LoadedObject:
    """A valid object of the input, defaulted and typed."""

    info: KindInfo
    namespace: str | None
    """The defaulted namespace; None for a cluster-scoped kind."""
    name: str
    file: str
    line: int
    raw: dict[str, Any]
    """The object after defaulting (docs/api.md, "The steps (`validate_document`)"), as plain
    JSON-like data.
    """
    model: KubeModel

    @property
    def kind(self) -> str:
        """The object's kind."""
        return self.info.kind


@dataclass
class Loaded:
    """Everything read from the PATHs: the valid objects and one line per problem."""

    objects: list[LoadedObject] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every document was valid."""
        return not self.problems

    def of_kind(self, model: type[M]) -> list[M]:
        """The typed objects of one kind, in input order."""
        return [o.model for o in self.objects if isinstance(o.model, model)]

    def loaded_of_kind(self, model: type[KubeModel]) -> list[LoadedObject]:
        """The loaded objects (with file, line and raw data) of one kind, in input order."""
        return [o for o in self.objects if isinstance(o.model, model)]


def load(paths: Sequence[str]) -> Loaded:
    """Read and validate every document under ``paths``; raises PathError for a missing PATH.

    At most MAX_TOTAL_BYTES are read in all: the file that would pass the limit, and every
    file after it, are not read, and one located line says so.
    """
    entries = [entry for path in paths for entry in walk(path)]
    loaded = Loaded()
    seen: set[tuple[str, str, str]] = set()
    budget = _Budget(MAX_TOTAL_BYTES)
    for index, (file, refusal) in enumerate(entries):
        if refusal is not None:
            loaded.problems.append(printable(refusal))
            continue
        try:
            for doc_or_problem in read_file(file, budget):
                if isinstance(doc_or_problem, str):
                    loaded.problems.append(printable(doc_or_problem))
                    continue
                _add_document(doc_or_problem, loaded, seen)
        except _OverBudget:
            rest = sum(1 for _, later in entries[index + 1 :] if later is None)
            loaded.problems.append(printable(_over_budget_line(file, rest)))
            break
    return loaded


def _over_budget_line(file: str, rest: int) -> str:
    """The one line of a command whose files pass MAX_TOTAL_BYTES at ``file``."""
    after = f" and {rest} later {'file' if rest == 1 else 'files'}" if rest else ""
    return (
        f"{file}:1: cannot read file: the input passes the limit of {MAX_TOTAL_BYTES // MIB} MiB "
        f"across all PATHs; this file{after} not read (validate fewer PATHs at once)"
    )


@dataclass
class _Budget:
    """The bytes one command may still read (MAX_TOTAL_BYTES across all its PATHs)."""

    left: int


class _OverBudget(ModelplaneError):
    """The file that would pass the command's total input limit (load stops there)."""


def expand(path: str) -> list[str]:
    """The files a PATH names: itself, or a directory's matching files in byte-wise order."""
    return [file for file, refusal in walk(path) if refusal is None]


def walk(path: str) -> list[tuple[str, str | None]]:
    """What a PATH names, in byte-wise path order: (file, None) to read, or (path, refusal line).

    Only regular files are read; a FIFO, device or socket is refused without opening it,
    and an unreadable directory or a directory symlink loop is a located problem, never a
    silent skip. Directory symlinks are followed (each real directory once).
    """
    try:
        info = os.stat(path)
    except OSError as err:
        if os.path.lexists(path):  # a dangling symlink, a symlink loop, no permission
            return [(path, f"{path}:1: cannot read file: {_reason(err)}")]
        raise PathError(f"no such file or directory: {printable(path)}") from err
    if stat.S_ISDIR(info.st_mode):
        found: list[tuple[str, str | None]] = []
        _walk_directory(path, {(info.st_dev, info.st_ino)}, found)
        return sorted(found, key=lambda entry: os.fsencode(os.path.relpath(entry[0], path)))
    refusal = _special(path, info.st_mode)
    return [(path, refusal)]


def _walk_directory(
    directory: str, ancestors: set[tuple[int, int]], found: list[tuple[str, str | None]]
) -> None:
    try:
        with os.scandir(directory) as listing:
            entries = list(listing)
    except OSError as err:
        found.append((directory, f"{directory}: cannot read directory: {_reason(err)}"))
        return
    for entry in entries:
        try:
            info = entry.stat()  # follows symlinks
        except OSError as err:
            if entry.name.endswith(EXTENSIONS):
                found.append((entry.path, f"{entry.path}:1: cannot read file: {_reason(err)}"))
            continue
        if stat.S_ISDIR(info.st_mode):
            identity = (info.st_dev, info.st_ino)
            if identity in ancestors:
                found.append((entry.path, f"{entry.path}: cannot read directory: symlink loop"))
                continue
            _walk_directory(entry.path, ancestors | {identity}, found)
        elif entry.name.endswith(EXTENSIONS):
            found.append((entry.path, _special(entry.path, info.st_mode)))


def _special(path: str, mode: int) -> str | None:
    """The refusal of a file that is not a regular file (reading it could block or never end)."""
    if stat.S_ISREG(mode):
        return None
    what = (
        "a FIFO"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return f"{path}:1: cannot read file: {what}, not a regular file"


def _reason(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "symlink loop"
    return err.strerror or str(err)


def read_file(file: str, budget: _Budget | None = None) -> Iterator[Document | str]:
    """The documents of one file, or a problem line where reading stops.

    With a ``budget`` the file's bytes are charged to it; _OverBudget when they do not fit.
    """
    try:
        data = _read_bounded(file, budget)
    except _Refused as refused:
        yield f"{file}:1: cannot read file: {refused}"
        return
    except OSError as err:
        yield f"{file}:1: cannot read file: {_reason(err)}"
        return
    if file.endswith(".json"):
        yield from _read_json(file, data)
    else:
        yield from _read_yaml(file, data)


class _Refused(ModelplaneError):
    """A file that is read no further (not regular, or too large)."""


def _read_bounded(file: str, budget: _Budget | None) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; never blocks on a FIFO."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        refusal = _special(file, info.st_mode)
        if refusal is not None:
            raise _Refused(refusal.split(": cannot read file: ", 1)[1])
        data = handle.read(MAX_FILE_BYTES + 1)
    if info.st_size > MAX_FILE_BYTES or len(data) > MAX_FILE_BYTES:
        raise _Refused(
            f"larger than the limit of {MAX_FILE_BYTES // MIB} MiB per file "
            "(split it into several files)"
        )
    if budget is not None:
        # Charged after the read: a file may grow between fstat and read, and the per-file
        # limit already bounds what one read costs.
        if len(data) > budget.left:
            raise _OverBudget(file)
        budget.left -= len(data)
    return data


# libyaml's parser when PyYAML was built with it: parsing dominates loading a large fleet.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """YAML as sigs.k8s.io/yaml reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_yaml(file: str, data: bytes) -> Iterator[Document | str]:
    fast = fastyaml.read(data, judge=_validated)
    if fast is not None:
        # The plain YAML fleets are written in: the same values and lines, much faster.
        judged = fast.judged
        for index, (line, content) in enumerate(fast.documents):
            result = judged[index] if index < len(judged) else None
            yield Document(file, line, content, null_free=fast.null_free, result=result)
        return
    yield from read_yaml_located(file, data)


def _validated(content: dict[str, Any], null_free: bool) -> ValidationResult:
    """An object document validated as _add_document would (the fast reader's judge: the
    reader hands over a fresh value, defaulted in place)."""
    return validate_document(content, owned=True, null_free=null_free)


def read_yaml_located(file: str, data: bytes) -> Iterator[Document | str]:
    """The documents of a YAML file read with PyYAML: every value located, every problem named."""
    loader = _Loader(data)
    # One value per input byte plus a fixed slack: aliases can never expand a file's
    # documents past a small multiple of its size (a billion laughs stops at once).
    values = JsonValues(budget=len(data) + ALIAS_SLACK)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            line = node.start_mark.line + 1
            content, problems = values.document(loader, node)
            if content is None and not problems:
                continue  # an empty document
            yield Document(file, line, content, tuple(problems))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        yield f"{file}:{line}: invalid YAML: {_first_line(err.problem or str(err))}"
    except yaml.YAMLError as err:
        yield f"{file}:{_reader_line(data, err)}: invalid YAML: {_first_line(str(err))}"
    except TooLarge as err:
        yield f"{file}:{err.line}: {err}"
    except RecursionError:
        yield f"{file}:1: invalid YAML: document nests too deeply"
    finally:
        loader.dispose()


def _reader_line(data: bytes, err: yaml.YAMLError) -> int:
    position = getattr(err, "position", None)
    if isinstance(position, int):
        return data[:position].count(b"\n") + 1
    return 1


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "parse error"


def _read_json(file: str, data: bytes) -> Iterator[Document | str]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        yield f"{file}:{line}: invalid JSON: {err.reason}"
        return
    if not text.strip():
        return
    fast = _json_documents(file, text)
    if fast is not None:
        yield from fast
        return
    yield from _read_json_located(file, text)


def _read_json_located(file: str, text: str) -> Iterator[Document | str]:
    """The documents of a JSON file, every problem located (``_read_json`` without its fast path)."""
    try:
        whole = json.loads(text, object_pairs_hook=json_object, parse_constant=_json_constant)
        # An array holds documents: each item is checked as a document of its own.
        items = whole if isinstance(whole, list) else [whole]
        checked = [json_problems(item, 1 if items is whole else 0) for item in items]
    except json.JSONDecodeError as err:
        yield f"{file}:{err.lineno}: invalid JSON: {err.msg}"
        return
    except ValueError as err:  # an integer of more digits than Python converts
        yield f"{file}:1: invalid JSON: {_first_line(str(err))}"
        return
    except TooLarge as err:
        yield f"{file}:1: {err}"
        return
    except RecursionError:
        yield f"{file}:1: invalid JSON: document nests too deeply"
        return
    start = len(text) - len(text.lstrip())
    if not isinstance(whole, list):
        yield Document(file, _line_at(text, start), whole, tuple(checked[0]))
        return
    # An array holds one document per item; find where each item starts. Lines are counted
    # on from the previous item: counting each from the start made a file of many items
    # quadratic (a minute for 10,000 replicas).
    decoder = json.JSONDecoder(object_pairs_hook=json_object, parse_constant=_json_constant)
    index = start + 1
    line, counted = 1, 0
    for item, problems in zip(whole, checked, strict=True):
        index = _skip(text, index)
        _, end = decoder.raw_decode(text, index)
        line += text.count("\n", counted, index)
        counted = index
        yield Document(file, line, item, tuple(problems))
        index = _skip(text, end)
        if index < len(text) and text[index] == ",":
            index += 1


class _NotPlain(ModelplaneError):
    """A JSON value json_problems would refuse, or may: the file is read the located way."""


def _distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _NotPlain("duplicate key")
    return result


def _int64(text: str) -> int:
    value = int(text)
    if not INT64[0] <= value <= INT64[1]:
        raise _NotPlain("outside int64")
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotPlain("not finite")
    return value


def _refused_constant(name: str) -> float:
    raise _NotPlain(name)


# json.loads with hooks that stop at every value json_problems would refuse (a duplicate
# key, an integer outside int64, NaN, an infinity, a float that overflows): a file the
# decoder reads to the end holds only values json_problems passes, but for their depth.
_PLAIN_DECODER = json.JSONDecoder(
    object_pairs_hook=_distinct_keys,
    parse_int=_int64,
    parse_float=_finite,
    parse_constant=_refused_constant,
)
_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # the whitespace json.loads skips
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # \ud800-\udfff, either half of a pair


def _json_documents(file: str, text: str) -> list[Document] | None:
    """The documents of a JSON file holding only values json_problems passes, or None.

    The located reader parses the file, walks every value for json_problems, and parses
    each item of an array a second time to find its line; here each item is parsed once,
    with the array's grammar checked between items (so a file is read here exactly when
    json.loads reads it), and the values' checks made by the decoder's hooks (a file
    escaping a surrogate, which may stand alone, is left to the located way). An item
    with fewer opening brackets than the nesting bound cannot pass it; one with as many is
    measured. Anything else, every invalid file
    among them, is read the located way, which words the problem.
    """
    if _SURROGATE_ESCAPE.search(text):
        return None  # one may stand alone, which json_problems refuses
    try:
        index = _JSON_SPACE.match(text).end()  # type: ignore[union-attr]
        if not text.startswith("[", index):
            value, end = _PLAIN_DECODER.raw_decode(text, index)
            if _JSON_SPACE.match(text, end).end() != len(text):  # type: ignore[union-attr]
                return None  # extra data
            spans: list[tuple[int, int, Any]] | None = [(index, end, value)]
            top = 0
        else:
            spans = _array_items(text, index)
            top = 1
    except (ValueError, RecursionError, _NotPlain):
        return None
    if spans is None:
        return None
    documents: list[Document] = []
    line, counted = 1, 0
    for start, end, value in spans:
        bound = MAX_DEPTH - top  # levels of containers an item may have
        if text.count("{", start, end) + text.count("[", start, end) >= bound and nests_past(
            value, bound
        ):
            return None  # it nests past MAX_DEPTH: json_problems words it
        line += text.count("\n", counted, start)
        counted = start
        null_free = text.find("null", start, end) < 0
        documents.append(Document(file, line, value, null_free=null_free))
    return documents


def _array_items(text: str, index: int) -> list[tuple[int, int, Any]] | None:
    """(start, end, value) of each item of the array at ``index``, the array's grammar and
    the end of the text checked as json.loads checks them; None where they do not hold."""
    items: list[tuple[int, int, Any]] = []
    index = _JSON_SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
    if not text.startswith("]", index):
        while True:
            value, end = _PLAIN_DECODER.raw_decode(text, index)
            items.append((index, end, value))
            index = _JSON_SPACE.match(text, end).end()  # type: ignore[union-attr]
            if text.startswith(",", index):
                index = _JSON_SPACE.match(text, index + 1).end()  # type: ignore[union-attr]
                continue
            if not text.startswith("]", index):
                return None
            break
    if _JSON_SPACE.match(text, index + 1).end() != len(text):  # type: ignore[union-attr]
        return None
    return items


def _json_constant(name: str) -> float:
    return float(name)  # NaN and infinities: kept, then refused by json_problems


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _add_document(doc: Document, loaded: Loaded, seen: set[tuple[str, str, str]]) -> None:
    where = f"{doc.file}:{doc.line}: "
    if doc.problems:
        # Refused before validation: no rule runs on a value the API server never decodes.
        ref = _object_ref(doc.content)
        schema = _schema_of(doc.content)
        for keys, message in doc.problems:
            path = field_path(keys, schema) or "(document)"
            loaded.problems.append(
                printable(where + (f"{ref}: " if ref else "") + f"{path}: {message}")
            )
        return
    if not isinstance(doc.content, dict):
        loaded.problems.append(printable(f"{doc.file}:{doc.line}: document is not an object"))
        return
    # The readers build a fresh JSON value per document (jsonvalues, json.loads, fastyaml):
    # validation may default it in place rather than copy it once more.
    result = doc.result if doc.result is not None else _validated(doc.content, doc.null_free)
    problems = list(result.problems)
    identity = _identity(result)
    if identity is not None:
        if identity in seen:
            duplicate = Problem("metadata.name", f"Duplicate value: {json.dumps(result.name)}")
            problems.insert(_duplicate_position(problems), duplicate)
        seen.add(identity)
    loaded.problems.extend(
        # A problem with no path is about the whole document, like `document is not an object`.
        printable(
            where + (f"{result.object_ref()}: {p.path}: {p.message}" if p.path else p.message)
        )
        for p in problems
    )
    if not problems and result.model is not None and result.info is not None:
        loaded.objects.append(
            LoadedObject(
                info=result.info,
                namespace=result.namespace if result.info.namespaced else None,
                name=str(result.name),
                file=doc.file,
                line=doc.line,
                raw=result.defaulted,
                model=result.model,
            )
        )


def _schema_of(content: Any) -> Schema | None:
    """The validator's schema of the document's kind, if it names a known one: it says which
    members are map entries, so a reader's problem is written as the schema's problems are."""
    kind = content.get("kind") if isinstance(content, dict) else None
    info = KIND_BY_NAME.get(kind) if isinstance(kind, str) else None
    return validator_schema(info.model) if info is not None else None


def _object_ref(content: Any) -> str:
    """``<Kind> <namespace>/<name>`` of a document refused before validation, if it has one."""
    if not isinstance(content, dict):
        return ""
    kind = content.get("kind")
    info = KIND_BY_NAME.get(kind) if isinstance(kind, str) else None
    meta = content.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    namespace = None
    if info is not None and info.namespaced:
        namespace = (meta.get("namespace") if isinstance(meta, dict) else None) or "default"
    if kind is None and name is None:
        return ""
    return ValidationResult(kind, info, name, namespace, {}).object_ref()


def _identity(result: ValidationResult) -> tuple[str, str, str] | None:
    if result.info is None or not isinstance(result.name, str) or not result.name:
        return None
    namespace = result.namespace if result.info.namespaced else ""
    return (result.info.kind, str(namespace), result.name)


def _duplicate_position(problems: list[Problem]) -> int:
    """Where a metadata.name problem goes among a document's problems (depth-first order)."""
    for index, problem in enumerate(problems):
        if (
            problem.path.split(".")[0].split("[")[0] not in ("apiVersion", "kind")
            and problem.path != "metadata.name"
        ):
            return index
    return len(problems)
