"""One owner of every memo: bounded, counted, thread-safe, cleared by one call.

A memo must never change a result: render, selectors and the scheduler give the same
answers with their memos cold, warm, and cleared in between.
"""

from __future__ import annotations

import ast
import sys
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from runtime.helpers import deployment, desired, inference_class, ready_cluster, request, satisfy
from scheduling.test_properties import World, run, worlds

from modelplane import memo
from modelplane.cel import DeviceProfile, matching_device_indexes, selector_matches
from modelplane.cel.engine import compile_expression, new_activation
from modelplane.cel.selectors import device_value
from modelplane.cli.main import main
from modelplane.memo import Memo, MemoRegistry, memoized
from modelplane.runtime.crossplane.server import handle

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "modelplane"
EXAMPLES = REPO / "examples"

# Every memo of the process (the inventory of docs/crossplane.md, "Memos"). A new memo is added here
# and to the note; a memo made outside modelplane.memo fails test_no_memo_outside_the_owner.
INVENTORY = {
    "api.validation.compiled",
    "api.validation.pattern_verdicts",
    "api.validation.metadata_entries",
    "api.validation.parsed_rules",
    "api.validation.patterns",
    "api.validation.rule_verdicts",
    "api.validation.transition_rules",
    "api.validation.typed_specs",
    "api.validation.verdicts",
    "api.validator_schemas",
    "cel.engine.decoded",
    "cel.engine.environments",
    "cel.engine.quantities",
    "cel.engine.semvers",
    "cel.rules",
    "cel.selector.activations",
    "cel.selector.programs",
    "cel.selector.results",
    "naming.provider_config_names",
    "runtime.answers",
    "runtime.documents",
    "runtime.encoded_structs",
    "scheduling.cluster_views",
    "scheduling.device_profiles",
    "scheduling.matches",
    "scheduling.observed_demand",
    "scheduling.plans",
    "scheduling.published_occupancy",
    "scheduling.shapes",
    "scheduling.shapes_by_raw",
}

# Module-level containers that are declarations filled at import, not memos.
DECLARATIONS = {("api/base.py", "RULES")}
# Module-level containers that hold, never answer: nothing is looked up in them.
# cli/main.py's keeps a command's loaded fleet until the process leaves (an in-process
# main clears it when it returns: tests/cli/test_entry.py).
HOLDERS = {("cli/main.py", "_KEPT")}

GPU = "gpu.nvidia.com"
SELECTORS = [
    f'device.capacity["{GPU}"].memory.compareTo(quantity("80Gi")) >= 0',
    f'device.attributes["{GPU}"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
    f'device.driver == "{GPU}" && device.attributes["{GPU}"].productName.startsWith("H")',
    f'device.capacity["{GPU}"].memory.isLessThan(quantity("48Gi"))',
]


def profile(product: str, compute: str, memory: str) -> DeviceProfile:
    return DeviceProfile.of(
        GPU,
        {"productName": {"string": product}, "cudaComputeCapability": {"version": compute}},
        {"memory": {"value": memory}},
    )


PROFILES = [
    profile(p, c, m)
    for p, c in (("H100", "9.0.0"), ("A100", "8.0.0"), ("L4", "8.9.0"), ("B200", "10.0.0"))
    for m in ("24Gi", "40Gi", "80Gi", "141Gi")
]


def uncached(expr: str, device: DeviceProfile) -> bool:
    """A selector's value computed without any memo: compiled and bound afresh."""
    program = compile_expression(expr, "selector")
    return program.run(new_activation("selector", device_value(device)))


@pytest.fixture
def many_switches() -> Iterator[None]:
    """Switch threads every microsecond, so a missing lock shows as lost counts."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


# ---------------------------------------------------------------- the policy


def lru_model(bound: int, keys: list[int]) -> tuple[int, int, int]:
    """(size, hits, misses) of a reference LRU of ``bound`` entries after looking up ``keys``."""
    entries: OrderedDict[int, None] = OrderedDict()
    hits = 0
    for key in keys:
        if key in entries:
            hits += 1
            entries.move_to_end(key)
        else:
            entries[key] = None
            if len(entries) > bound:
                entries.popitem(last=False)
    return len(entries), hits, len(keys) - hits


@given(st.integers(1, 6), st.lists(st.integers(0, 12), max_size=120))
def test_a_memo_is_a_bounded_lru_and_counts_every_lookup(bound: int, keys: list[int]) -> None:
    m: Memo[int, int] = Memo("t", bound, MemoRegistry())
    for key in keys:
        assert m.get(key, lambda k=key: k * k) == key * key
        assert len(m) <= bound
    s = m.stats()
    assert (s.size, s.hits, s.misses) == lru_model(bound, keys)
    assert s.bound == bound


@given(st.integers(1, 6), st.lists(st.integers(0, 12), max_size=120))
def test_a_memoized_function_is_a_bounded_lru_and_counts(bound: int, keys: list[int]) -> None:
    registry = MemoRegistry()
    calls: list[int] = []

    @memoized("t", bound, registry)
    def square(n: int) -> int:
        calls.append(n)
        return n * n

    for key in keys:
        assert square(key) == key * key
    (s,) = registry.stats()
    assert (s.size, s.hits, s.misses) == lru_model(bound, keys)
    assert len(calls) == s.misses  # a hit never calls the function


def test_none_and_false_are_remembered_values() -> None:
    m: Memo[str, bool | None] = Memo("t", 4, MemoRegistry())
    computed: list[str] = []
    for _ in range(3):
        assert m.get("none", lambda: computed.append("none")) is None
        assert m.get("false", lambda: bool(computed.append("false"))) is False
    assert computed == ["none", "false"]
    assert (m.stats().hits, m.stats().misses) == (4, 2)


def test_an_entry_its_check_refuses_is_a_miss() -> None:
    # Keyed by a name, holding what it was computed from: only equal input is answered.
    m: Memo[str, tuple[list[int], int]] = Memo("t", 4, MemoRegistry())
    m.put("c1", ([1, 2], 3))
    assert m.lookup_valid("c1", lambda entry: memo.same(entry[0], [1, 2])) == ([1, 2], 3)
    assert not isinstance(m.lookup_valid("c1", lambda entry: memo.same(entry[0], [1, 5])), tuple)
    assert not isinstance(m.lookup_valid("c2", lambda entry: True), tuple)
    assert (m.stats().hits, m.stats().misses) == (1, 2)
    assert m.stats().size == 1  # a refused entry stays until replaced


def test_clear_empties_and_the_counters_keep_counting() -> None:
    registry = MemoRegistry()
    m: Memo[int, int] = Memo("a", 8, registry)

    @memoized("b", 8, registry)
    def double(n: int) -> int:
        return 2 * n

    for n in (1, 2, 1):
        m.get(n, lambda n=n: n)
        double(n)
    registry.clear_all()
    assert [(s.name, s.size, s.hits, s.misses) for s in registry.stats()] == [
        ("a", 0, 1, 2),
        ("b", 0, 1, 2),
    ]
    m.get(1, lambda: 1)
    double(1)
    assert [(s.size, s.hits, s.misses) for s in registry.stats()] == [(1, 1, 3), (1, 1, 3)]


def test_names_are_unique_and_bounds_positive() -> None:
    registry = MemoRegistry()
    Memo("x", 1, registry)
    with pytest.raises(ValueError, match="'x' is registered already"):
        Memo("x", 1, registry)
    with pytest.raises(ValueError, match="bound must be at least 1"):
        Memo("y", 0, registry)
    with pytest.raises(ValueError, match="bound must be at least 1"):
        memoized("z", 0, registry)


# ---------------------------------------------------------------- threads


# More keys than the bound, so evictions race with hits: without the lock, a hit's
# move-to-front finds its key evicted (a KeyError) with (2, 3), in practice every run.
@pytest.mark.parametrize(("bound", "keys"), [(2, 3), (16, 40)])
def test_threads_sharing_a_memo_get_right_answers_and_exact_counts(
    many_switches: None, bound: int, keys: int
) -> None:
    m: Memo[int, int] = Memo("t", bound, MemoRegistry())

    def work(seed: int) -> bool:
        ok = True
        for i in range(20_000):
            key = (seed * 7 + i) % keys
            ok &= m.get(key, lambda k=key: k * 3) == key * 3
        return ok

    with ThreadPoolExecutor(8) as pool:  # the gRPC server's worker count
        assert all(pool.map(work, range(8)))
    s = m.stats()
    assert s.hits + s.misses == 8 * 20_000
    assert s.size <= bound


def test_threads_sharing_a_memoized_function(many_switches: None) -> None:
    registry = MemoRegistry()

    @memoized("t", 16, registry)
    def triple(n: int) -> int:
        return 3 * n

    def work(seed: int) -> bool:
        return all(triple(k % 40) == 3 * (k % 40) for k in range(seed, seed + 3000))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8)))
    (s,) = registry.stats()
    assert (s.hits + s.misses, s.size <= 16) == (8 * 3000, True)


def test_selectors_answer_the_same_on_every_thread() -> None:
    # An engine activation works only on the thread that built it (cel-expr/cel-python
    # py_cel/py_cel_arena.cc: the arena map is thread_local). Warm every device's
    # activation here, then evaluate new selectors on the server's worker threads.
    memo.clear_all()
    warm = 'device.driver == "gpu.nvidia.com"'
    assert all(selector_matches(warm, p) for p in PROFILES)
    pairs = [(e, p) for e in SELECTORS for p in PROFILES]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda pair: selector_matches(*pair), pairs))
    assert got == [uncached(e, p) for e, p in pairs]
    assert any(got) and not all(got)


def test_the_function_schedules_after_the_main_thread_warmed_the_fleet() -> None:
    # The order that once failed: a schedule in this thread, then the gRPC server's thread.
    memo.clear_all()
    world = [ready_cluster("us-east-1"), inference_class()]
    other = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("1Gi")) >= 0'
    for selector, threaded in ((other, False), (None, True)):
        xr = deployment(replicas=1) if selector is None else deployment(replicas=1, selector=other)

        def call(xr: dict[str, object] = xr) -> set[str]:
            first = handle(request(xr))
            return set(desired(handle(request(xr, required=satisfy(first, world)))))

        if threaded:
            with ThreadPoolExecutor(1) as pool:
                keys = pool.submit(call).result()
        else:
            keys = call()
        assert "replica-us-east-1-0" in keys, (selector, keys)


def _counts(name: str) -> tuple[int, int]:
    [found] = [s for s in memo.stats() if s.name == name]
    return found.hits, found.misses


def test_an_unchanged_cluster_is_read_once_across_calls() -> None:
    # The view of a cluster and its published occupancy as ledger state are
    # remembered for the same cluster bytes; a changed cluster is read afresh, once.
    memo.clear_all()
    world = [ready_cluster(f"c{i}") for i in range(3)] + [inference_class()]
    first = handle(request(deployment()))
    steady = request(deployment(), required=satisfy(first, world))
    handle(steady)
    names = ("scheduling.cluster_views", "scheduling.published_occupancy")
    before = {n: _counts(n) for n in names}
    # Another deployment over the same clusters: its whole answer is not remembered
    # (runtime.answers), so the scheduler runs and reads the clusters' memos.
    handle(request(deployment("other"), required=satisfy(first, world)))
    for name in names:
        hits, misses = _counts(name)
        assert misses == before[name][1], name  # nothing read again
        assert hits >= before[name][0] + 3, name
    changed = request(
        deployment(),
        required={**satisfy(first, world), "clusters": [ready_cluster("c0", nodes=2), *world[1:3]]},
    )
    handle(changed)
    for name in names:
        assert _counts(name)[1] == before[name][1] + 1, name


# ---------------------------------------------------------------- the registry


def exercise(capsys: pytest.CaptureFixture[str]) -> str:
    """Render the examples, filter a fleet with selectors, and answer one function call."""
    assert main(["render", str(EXAMPLES)]) == 0
    out, _ = capsys.readouterr()
    assert matching_device_indexes(SELECTORS[:2], PROFILES)
    world = [ready_cluster("us-east-1"), inference_class()]
    first = handle(request(deployment()))
    assert desired(handle(request(deployment(), required=satisfy(first, world))))
    return out


def test_every_memo_is_registered_and_clear_all_empties_every_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    exercise(capsys)
    sizes = {s.name: s.size for s in memo.stats()}
    assert set(sizes) == INVENTORY
    assert {name for name, size in sizes.items() if size == 0} == set()
    memo.clear_all()
    assert {s.name: s.size for s in memo.stats()} == dict.fromkeys(INVENTORY, 0)


def test_no_memo_outside_the_owner() -> None:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel == "memo.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "functools":
                found += [f"{rel}: functools.{a.name}" for a in node.names if "cache" in a.name]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "functools"
                and "cache" in node.attr
            ):
                found.append(f"{rel}: functools.{node.attr}")
        for stmt in tree.body:
            target, value = _assignment(stmt)
            if target and _empty_container(value) and (rel, target) not in DECLARATIONS | HOLDERS:
                found.append(f"{rel}: module-level {target} starts empty (a memo?)")
    assert found == []


def _assignment(stmt: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id, stmt.value
    return None, None


def _empty_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.Dict | ast.List | ast.Set):
        return not (value.keys if isinstance(value, ast.Dict) else value.elts)
    if isinstance(value, ast.Call) and not value.args:
        func = value.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name in {"dict", "list", "set", "OrderedDict", "defaultdict", "WeakValueDictionary"}
    return False


# ---------------------------------------------------------------- never a different result


def test_render_is_the_same_cold_warm_and_cleared(capsys: pytest.CaptureFixture[str]) -> None:
    memo.clear_all()
    cold = exercise(capsys)
    warm = exercise(capsys)
    memo.clear_all()
    cleared = exercise(capsys)
    assert cold == warm == cleared
    assert "kind: ModelReplica" in cold


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(SELECTORS), st.sampled_from(PROFILES)), min_size=1),
    st.lists(st.booleans(), min_size=1),
)
def test_selectors_are_the_same_cold_warm_and_cleared(
    pairs: list[tuple[str, DeviceProfile]], clears: list[bool]
) -> None:
    memo.clear_all()
    for i, (expr, device) in enumerate(pairs):
        if clears[i % len(clears)]:
            memo.clear_all()
        assert selector_matches(expr, device) == uncached(expr, device)


@settings(max_examples=40, deadline=None)
@given(worlds())
def test_schedules_are_the_same_cold_warm_and_cleared(w: World) -> None:
    memo.clear_all()
    cold = run(w)
    warm = run(w)
    memo.clear_all()
    assert cold == warm == run(w)
