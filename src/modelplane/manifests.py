"""Reading manifests from PATHs (cli.md "Inputs"): the shell around api.validation.

Files and directories (searched recursively for ``*.yaml``, ``*.yml``, ``*.json``
in byte-wise sorted path order), multi-document YAML, JSON files holding one
object or an array of objects. Every document remembers its file and the line
it starts on; every problem comes out as the one line ``validate`` prints.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import yaml

from modelplane.api.base import KubeModel
from modelplane.api.kinds import KindInfo
from modelplane.api.validation import Problem, ValidationResult, validate_document

EXTENSIONS = (".yaml", ".yml", ".json")

M = TypeVar("M", bound=KubeModel)


class PathError(Exception):
    """A PATH argument that names nothing (a usage error, exit 2)."""


@dataclass(frozen=True)
class Document:
    """One parsed document and where it came from."""

    file: str
    line: int
    content: Any


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
    """The object after defaulting (api.md §0.2), as plain JSON-like data."""
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
    """Read and validate every document under ``paths``; raises PathError for a missing PATH."""
    files = [f for path in paths for f in expand(path)]
    loaded = Loaded()
    seen: set[tuple[str, str, str]] = set()
    for file in files:
        for doc_or_problem in read_file(file):
            if isinstance(doc_or_problem, str):
                loaded.problems.append(doc_or_problem)
                continue
            _add_document(doc_or_problem, loaded, seen)
    return loaded


def expand(path: str) -> list[str]:
    """The files a PATH names: itself, or a directory's matching files in byte-wise order."""
    if os.path.isfile(path):
        return [path]
    if not os.path.isdir(path):
        raise PathError(f"no such file or directory: {path}")
    found: list[str] = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        found.extend(os.path.join(root, n) for n in names if n.endswith(EXTENSIONS))
    return sorted(found, key=lambda f: os.fsencode(os.path.relpath(f, path)))


def read_file(file: str) -> Iterator[Document | str]:
    """The documents of one file, or a problem line where reading stops."""
    try:
        with open(file, "rb") as handle:
            data = handle.read()
    except OSError as err:
        yield f"{file}:1: cannot read file: {err.strerror or err}"
        return
    if file.endswith(".json"):
        yield from _read_json(file, data)
    else:
        yield from _read_yaml(file, data)


# libyaml's parser when PyYAML was built with it: parsing dominates loading a large fleet.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BaseLoader):  # type: ignore[valid-type,misc]
    """YAML as sigs.k8s.io/yaml reads it: timestamps stay strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_yaml(file: str, data: bytes) -> Iterator[Document | str]:
    loader = _Loader(data)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            line = node.start_mark.line + 1
            content = loader.construct_document(node)
            if content is None:
                continue  # an empty document
            yield Document(file, line, content)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        yield f"{file}:{line}: invalid YAML: {_first_line(err.problem or str(err))}"
    except yaml.YAMLError as err:
        yield f"{file}:{_reader_line(data, err)}: invalid YAML: {_first_line(str(err))}"
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
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as err:
        yield f"{file}:{err.lineno}: invalid JSON: {err.msg}"
        return
    except RecursionError:
        yield f"{file}:1: invalid JSON: document nests too deeply"
        return
    start = len(text) - len(text.lstrip())
    if not isinstance(whole, list):
        yield Document(file, _line_at(text, start), whole)
        return
    # An array holds one document per item; find where each item starts.
    decoder = json.JSONDecoder()
    index = start + 1
    for item in whole:
        index = _skip(text, index)
        _, end = decoder.raw_decode(text, index)
        yield Document(file, _line_at(text, index), item)
        index = _skip(text, end)
        if index < len(text) and text[index] == ",":
            index += 1


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _add_document(doc: Document, loaded: Loaded, seen: set[tuple[str, str, str]]) -> None:
    if not isinstance(doc.content, dict):
        loaded.problems.append(f"{doc.file}:{doc.line}: document is not an object")
        return
    result = validate_document(doc.content)
    problems = list(result.problems)
    identity = _identity(result)
    if identity is not None:
        if identity in seen:
            duplicate = Problem("metadata.name", f"Duplicate value: {json.dumps(result.name)}")
            problems.insert(_duplicate_position(problems), duplicate)
        seen.add(identity)
    where = f"{doc.file}:{doc.line}: "
    loaded.problems.extend(
        # A problem with no path is about the whole document, like `document is not an object`.
        where + (f"{result.object_ref()}: {p.path}: {p.message}" if p.path else p.message)
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
