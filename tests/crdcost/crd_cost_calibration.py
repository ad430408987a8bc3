"""Calibration cases for the CRD rule cost estimator, from upstream's own cost tests.

Our own data table of the expectations in kubernetes v1.34 (tag v1.34.x; staging repos
at v0.34.9):

* ``staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/compilation_test.go``
  ``TestCostEstimation``: each case is estimated twice, on its schema without bounds
  ("calc") and with ``maxItems``/``maxProperties``/``maxLength`` set to ``set_max``
  ("set"). Upstream leaves a zero expectation unchecked, so do we; "at least" cases only
  require the cost to reach the limit (100,000,000 in that test).
* ``staging/src/k8s.io/apiserver/pkg/cel/library/cost_test.go``: see LIBRARY_CASES.

Each case is named after the upstream case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]
Gen = Callable[[int | None], Schema]

COST_LIMIT = 100_000_000  # compilation_test.go costLimit


def _type(t: str) -> Schema:
    # parseRuleType: duration/date/date-time are string formats; int-or-string is untyped.
    if t in ("duration", "date", "date-time"):
        return {"type": "string", "format": t}
    if t == "int-or-string":
        return {"x-kubernetes-int-or-string": True}
    return {"type": t}


def _bound(s: Schema, key: str, n: int | None) -> Schema:
    return s if n is None else {**s, key: n}


def _rule(s: Schema, rule: str) -> Schema:
    return {**s, "x-kubernetes-validations": [{"rule": rule}]}


def _req_obj() -> Schema:
    return {
        "type": "object",
        "required": ["required"],
        "properties": {"required": {"type": "string"}, "optional": {"type": "string"}},
    }


def array_with(item: str, rule: str) -> Gen:
    """genArrayWithRule."""
    return lambda n: _rule(_bound({"type": "array", "items": _type(item)}, "maxItems", n), rule)


def array_of_arrays(item: str, rule: str) -> Gen:
    """genArrayOfArraysWithRule."""
    inner = {"type": "array", "items": {"type": item}}
    return lambda n: _rule(_bound({"type": "array", "items": inner}, "maxItems", n), rule)


def object_array(rule: str) -> Gen:
    """genObjectArrayWithRule."""
    return lambda n: _rule(_bound({"type": "array", "items": _req_obj()}, "maxItems", n), rule)


def map_array(value: str, rule: str) -> Gen:
    """getMapArrayWithRule."""
    item = {"type": "object", "additionalProperties": {"type": value}}
    return lambda n: _rule(_bound({"type": "array", "items": item}, "maxItems", n), rule)


def map_with(value: str, rule: str) -> Gen:
    """genMapWithRule."""
    return lambda n: _rule(
        _bound({"type": "object", "additionalProperties": _type(value)}, "maxProperties", n),
        rule,
    )


def map_with_item(item: Schema, rule: str) -> Gen:
    """genMapWithCustomItemRule."""
    return lambda n: _rule(
        _bound({"type": "object", "additionalProperties": item}, "maxProperties", n), rule
    )


def string_with(rule: str) -> Gen:
    """genStringWithRule."""
    return lambda n: _rule(_bound({"type": "string"}, "maxLength", n), rule)


def enum_with(rule: str, *values: str) -> Gen:
    """genEnumWithRuleAndValues."""
    return lambda n: _rule(_bound({"type": "string", "enum": list(values)}, "maxLength", n), rule)


def bytes_with(rule: str) -> Gen:
    """genBytesWithRule."""
    return lambda n: _rule(_bound({"type": "string", "format": "byte"}, "maxLength", n), rule)


def nested_spec(rule: str) -> Gen:
    """genNestedSpecWithRule: a map of strings, both bounded by the same number."""
    return lambda n: _rule(
        _bound(
            {"type": "object", "additionalProperties": _bound({"type": "string"}, "maxLength", n)},
            "maxProperties",
            n,
        ),
        rule,
    )


def all_max_nested(rule: str) -> Gen:
    """genAllMaxNestedSpecWithRootRule."""

    def gen(n: int | None) -> Schema:
        inner = _bound(_req_obj(), "maxProperties", n)
        mid = _bound({"type": "object", "additionalProperties": inner}, "maxProperties", n)
        return _rule(_bound({"type": "array", "items": mid}, "maxItems", n), rule)

    return gen


def one_max_nested(rule: str) -> Gen:
    """genOneMaxNestedSpecWithRootRule."""

    def gen(n: int | None) -> Schema:
        mid = _bound({"type": "object", "additionalProperties": _req_obj()}, "maxProperties", n)
        return _rule({"type": "array", "items": mid}, rule)

    return gen


def _str(n: int | None) -> Schema:
    return _bound({"type": "string"}, "maxLength", n)


def join_case(rule: str) -> Gen:
    """The "extended library join/isSorted" generators: a bounded list of bounded strings."""
    return lambda n: _rule(
        _bound(
            {"type": "array", "x-kubernetes-list-type": "atomic", "items": _str(n)}, "maxItems", n
        ),
        rule,
    )


def replace_case(n: int | None) -> Schema:
    """The "extended library replace" generator."""
    props = {"str": _str(n), "before": _str(2), "after": _str(4)}
    return _rule(
        {"type": "object", "properties": props},
        "self.str.replace(self.before, self.after) == 'does not matter'",
    )


def split_case(n: int | None) -> Schema:
    """The "extended library split" generator."""
    return _rule(
        {"type": "object", "properties": {"str": _str(n), "separator": _str(n)}},
        "self.str.split(self.separator) == []",
    )


def int_or_string_quantity(n: int | None) -> Schema:
    """The "IntOrString type with quantity rule" generator."""
    return _rule(_bound({"x-kubernetes-int-or-string": True}, "maxLength", n), "isQuantity(self)")


@dataclass(frozen=True)
class Case:
    """One TestCostEstimation case; 0 means unchecked upstream, at_least means "exceeds"."""

    name: str
    gen: Gen
    calc: int
    set_max: int
    set_cost: int
    calc_at_least: bool = False


OBJ_FOR_MAP = _req_obj()
ARRAY_FOR_MAP: Schema = {"type": "array", "items": {"type": "number"}}
MAP_FOR_MAP: Schema = {"type": "object", "additionalProperties": {"type": "number"}}

COST_ESTIMATION = [
    Case("number array with all", array_with("number", "self.all(x, true)"), 4718591, 10, 32),
    Case("string array with all", array_with("string", "self.all(x, true)"), 3145727, 20, 62),
    Case("boolean array with all", array_with("boolean", "self.all(x, true)"), 1887437, 5, 17),
    Case(
        "array of number arrays with all",
        array_of_arrays("number", "self.all(x, true)"),
        3145727,
        100,
        302,
    ),
    Case("array of objects with all", object_array("self.all(x, true)"), 555128, 50, 152),
    Case("map of numbers with all", map_with("number", "self.all(x, true)"), 1348169, 10, 32),
    Case("map of numbers with has", map_with("number", "has(self.x)"), 0, 100, 0),
    Case("map of strings with all", map_with("string", "self.all(x, true)"), 1179647, 3, 11),
    Case("map of strings with has", map_with("string", "has(self.x)"), 0, 550, 0),
    Case("map of booleans with all", map_with("boolean", "self.all(x, true)"), 943718, 100, 302),
    Case("map of booleans with has", map_with("boolean", "has(self.x)"), 0, 1024, 0),
    Case("string with contains", string_with("self.contains('test')"), 314574, 10, 5),
    Case("string with startsWith", string_with("self.startsWith('test')"), 2, 15, 2),
    Case("string with endsWith", string_with("self.endsWith('test')"), 2, 30, 2),
    Case("concat string", string_with('size(self + "hello") > size("hello")'), 314578, 4, 7),
    Case("index of array with numbers", array_with("number", "self[1] == 0.0"), 2, 5000, 2),
    Case(
        "index of array with strings", array_with("string", "self[1] == self[1]"), 314577, 8, 314577
    ),
    Case(
        "O(n^2) loop with numbers",
        array_with("number", "self.all(x, self.all(y, true))"),
        COST_LIMIT,
        10,
        352,
        calc_at_least=True,
    ),
    Case(
        "O(n^3) loop with numbers",
        array_with("number", "self.all(x, self.all(y, self.all(z, true)))"),
        COST_LIMIT,
        10,
        3552,
        calc_at_least=True,
    ),
    Case("regex matches simple", string_with('self.matches("x")'), 314574, 50, 22),
    Case(
        "regex matches empty string",
        string_with('"".matches("(((((((((())))))))))[0-9]")'),
        7,
        10,
        7,
    ),
    Case("regex matches empty regex", string_with('self.matches("")'), 1, 100, 1),
    Case(
        "map of strings with value length",
        nested_spec("self.all(x, x.contains(self[x]))"),
        2752507,
        10,
        72,
    ),
    Case("set array maxLength to zero", array_with("number", "self[3] == 0.0"), 2, 0, 2),
    Case("set map maxLength to zero", map_with("number", 'self["x"] == 0.0'), 2, 0, 2),
    Case("set string maxLength to zero", string_with('self == "x"'), 2, 0, 1),
    Case("set bytes maxLength to zero", bytes_with('self == b"x"'), 2, 0, 1),
    Case(
        "set maxLength greater than estimated maxLength",
        array_with("number", "self.all(x, x == 0.0)"),
        6291454,
        3 * 1024 * 2048,
        25165826,
    ),
    Case(
        "nested types with root rule with all supporting maxLength",
        all_max_nested('self.all(x, x["y"].required == "z")'),
        7340027,
        10,
        72,
    ),
    Case(
        "nested types with root rule with one supporting maxLength",
        one_max_nested('self.all(x, x["y"].required == "z")'),
        7340027,
        10,
        7340027,
    ),
    Case(
        "int-or-string array with all",
        array_with("int-or-string", "self.all(x, true)"),
        4718591,
        10,
        32,
    ),
    Case(
        "index of array with int-or-strings", array_with("int-or-string", "self[0] == 5"), 3, 10, 3
    ),
    Case("index of array with booleans", array_with("boolean", "self[0] == false"), 2, 25, 2),
    Case("index of array of objects", object_array("self[0] == null"), 2, 422, 2),
    Case(
        "index of array of array of numnbers",
        array_of_arrays("number", "self[0][0] == -1.0"),
        3,
        51,
        3,
    ),
    Case(
        "array of number maps with all",
        map_array("number", "self.all(x, x.y == 25.2)"),
        6291452,
        12,
        74,
    ),
    Case("index of array of number maps", map_array("number", "self[0].x > 2.0"), 4, 3000, 4),
    Case("duration array with all", array_with("duration", "self.all(x, true)"), 2359295, 5, 17),
    Case("index of duration array", array_with("duration", "self[0].getHours() == 2"), 4, 525, 4),
    Case("date array with all", array_with("date", "self.all(x, true)"), 725936, 15, 47),
    Case("index of date array", array_with("date", "self[2].getDayOfMonth() == 13"), 4, 42, 4),
    Case("date-time array with all", array_with("date-time", "self.all(x, true)"), 428963, 25, 77),
    Case(
        "index of date-time array", array_with("date-time", "self[2].getMinutes() == 45"), 4, 99, 4
    ),
    Case(
        "map of int-or-strings with all",
        map_with("int-or-string", "self.all(x, true)"),
        1348169,
        15,
        47,
    ),
    Case("map of int-or-strings with has", map_with("int-or-string", "has(self.x)"), 0, 5000, 0),
    Case(
        "map of objects with all", map_with_item(OBJ_FOR_MAP, "self.all(x, true)"), 428963, 20, 62
    ),
    Case("map of objects with has", map_with_item(OBJ_FOR_MAP, "has(self.x)"), 0, 9001, 0),
    Case(
        "map of number maps with all",
        map_with_item(MAP_FOR_MAP, "self.all(x, true)"),
        1179647,
        10,
        32,
    ),
    Case("map of number maps with has", map_with_item(MAP_FOR_MAP, "has(self.x)"), 0, 101, 0),
    Case(
        "map of number arrays with all",
        map_with_item(ARRAY_FOR_MAP, "self.all(x, true)"),
        1179647,
        25,
        77,
    ),
    Case("map of number arrays with has", map_with_item(ARRAY_FOR_MAP, "has(self.x)"), 0, 40000, 0),
    Case("map of durations with all", map_with("duration", "self.all(x, true)"), 1048577, 5, 17),
    Case("map of durations with has", map_with("duration", "has(self.x)"), 0, 256, 0),
    Case("map of dates with all", map_with("date", "self.all(x, true)"), 524288, 10, 32),
    Case("map of dates with has", map_with("date", "has(self.x)"), 0, 65536, 0),
    Case("map of date-times with all", map_with("date-time", "self.all(x, true)"), 349526, 25, 77),
    Case("map of date-times with has", map_with("date-time", "has(self.x)"), 0, 490, 0),
    Case("extended library regex find", string_with("self.find('[0-9]+') == ''"), 629147, 10, 11),
    Case("extended library join", join_case("self.join(' ') == 'aa bb'"), 329853068905, 10, 43),
    Case("extended library isSorted", join_case("self.isSorted() == true"), 329854432052, 10, 52),
    Case("extended library replace", replace_case, 629154, 4, 12),
    Case("extended library split", split_case, 629160, 10, 22),
    Case(
        "extended library lowerAscii", string_with("self.lowerAscii() == 'lower!'"), 314575, 10, 6
    ),
    Case("check cost of size call", map_with("integer", "oldSelf.size() == self.size()"), 5, 10, 5),
    Case(
        "check cost of timestamp comparison",
        map_with("date-time", 'self["a"] == self["b"]'),
        8,
        7,
        8,
    ),
    Case(
        "check cost of duration comparison",
        map_with("duration", 'self["c"] == self["d"]'),
        8,
        42,
        8,
    ),
    Case(
        "enums with maxLength equals to the longest possible value",
        enum_with("self.contains('A')", "A", "B", "C", "LongValue"),
        2,
        1000,
        401,
    ),
    Case("IntOrString type with quantity rule", int_or_string_quantity, 314574, 20, 9),
]


# ---------------------------------------------------------------- library cost_test.go

# cost_test.go's literals (const block at the top of the file).
INT_LIST = "[1, 2, 3, 4, 5]"
UINT_LIST = "[uint(1), uint(2), uint(3), uint(4), uint(5)]"
DOUBLE_LIST = "[1.0, 2.0, 3.0, 4.0, 5.0]"
BOOL_LIST = "[false, true, false, true, false]"
STRING_LIST = "[" + ", ".join(["'012345678901'"] * 5) + "]"
BYTES_LIST = "[" + ", ".join(["bytes('012345678901')"] * 5) + "]"
DURATION_LIST = "[" + ", ".join(f"duration('{i}s')" for i in range(1, 6)) + "]"
TIMESTAMP_LIST = (
    "[" + ", ".join(f"timestamp('2011-01-0{i}T00:00:00.000+01:00')" for i in range(1, 6)) + "]"
)
STRING_LITERAL = "'01234567890123456789012345678901234567890123456789'"


@dataclass(frozen=True)
class LibCase:
    """One expression of cost_test.go with its expected [min, max] estimate. That test sizes
    every string or bytes value CEL cannot size as 0..12 (its testCostEstimator)."""

    test: str
    name: str
    expr: str
    lo: int
    hi: int


def _lists_cases() -> list[LibCase]:
    """TestListsCost and TestIndexOfCost."""
    out = []
    for lit, lo, hi in (
        (INT_LIST, 15, 15),
        (UINT_LIST, 20, 20),
        (DOUBLE_LIST, 15, 15),
        (DURATION_LIST, 20, 20),
    ):
        out.append(LibCase("TestListsCost", lit + ".sum()", lit + ".sum()", lo, hi))
    ordered = (
        (INT_LIST, 15, 15),
        (UINT_LIST, 20, 20),
        (DOUBLE_LIST, 15, 15),
        (BOOL_LIST, 15, 15),
        (STRING_LIST, 15, 25),
        (BYTES_LIST, 25, 35),
        (DURATION_LIST, 20, 20),
        (TIMESTAMP_LIST, 20, 20),
    )
    for op in (".isSorted()", ".max()", ".min()"):
        for lit, lo, hi in ordered:
            out.append(LibCase("TestListsCost", lit + op, lit + op, lo, hi))
    index = (
        (INT_LIST, "3", 15, 15),
        (UINT_LIST, "uint(3)", 21, 21),
        (DOUBLE_LIST, "3.0", 15, 15),
        (BOOL_LIST, "true", 15, 15),
        (STRING_LIST, "'x'", 15, 25),
        (BYTES_LIST, "bytes('x')", 26, 36),
        (DURATION_LIST, "duration('3s')", 21, 21),
        (TIMESTAMP_LIST, "timestamp('2011-01-03T00:00:00.000+01:00')", 21, 21),
        (STRING_LITERAL, "'123'", 5, 5),
    )
    for op in (".indexOf(%s)", ".lastIndexOf(%s)"):
        for lit, param, lo, hi in index:
            e = lit + op % param
            out.append(LibCase("TestIndexOfCost", e, e, lo, hi))
    return out


def _url_cases() -> list[LibCase]:
    """TestURLsCost."""
    base = "url('https:://kubernetes.io/')"
    out = [
        LibCase("TestURLsCost", "url." + op, base + op, 4, 4)
        for op in (
            ".getScheme()",
            ".getHostname()",
            ".getHost()",
            ".getPort()",
            ".getEscapedPath()",
            ".getQuery()",
        )
    ]
    out.append(
        LibCase(
            "TestURLsCost",
            "url. == url('https:://kubernetes.io/')",
            base + " == url('https:://kubernetes.io/')",
            7,
            9,
        )
    )
    out.append(
        LibCase("TestURLsCost", "url. == url('http://x.b')", base + " == url('http://x.b')", 5, 5)
    )
    return out


def _ip_cases() -> list[LibCase]:
    """TestIPCost, TestIPIsCanonicalCost and TestCIDRCost."""
    out = []
    for ip, c in (("ip('192.168.0.1')", 2), ("ip('2001:db8:3333:4444:5555:6666:7777:8888')", 4)):
        out.append(LibCase("TestIPCost", ip, ip, c, c))
        for op in (
            ".family()",
            ".isUnspecified()",
            ".isLoopback()",
            ".isLinkLocalMulticast()",
            ".isLinkLocalUnicast()",
            ".isGlobalUnicast()",
        ):
            out.append(LibCase("TestIPCost", ip + op, ip + op, c + 1, c + 1))
        eq = ip + " == ip('192.168.0.1')"
        out.append(LibCase("TestIPCost", eq, eq, c + 3, c + 3))
    for e, c in (
        ("ip.isCanonical('192.168.0.1')", 3),
        ("ip.isCanonical('2001:db8:3333:4444:5555:6666:7777:8888')", 8),
        ("ip.isCanonical('2001:db8::abcd')", 3),
    ):
        out.append(LibCase("TestIPIsCanonicalCost", e, e, c, c))
    common = [
        ("", 0, 0),
        (".ip()", 1, 1),
        (".prefixLength()", 1, 1),
        (".masked()", 1, 1),
        (" == cidr('2001:db8::/32')", 3, 3),
    ]
    v4 = common + [
        (".containsCIDR(cidr('192.0.0.0/30'))", 5, 9),
        (".containsCIDR(cidr('192.168.0.0/16'))", 5, 9),
        (".containsCIDR('192.0.0.0/30')", 5, 9),
        (".containsCIDR('192.168.0.0/16')", 5, 9),
        (".containsIP(ip('192.0.0.1'))", 2, 5),
        (".containsIP(ip('192.169.0.1'))", 3, 6),
        (".containsIP(ip('192.169.169.250'))", 3, 6),
        (".containsIP('192.0.0.1')", 2, 5),
        (".containsIP('192.169.0.1')", 3, 6),
    ]
    v6 = common + [
        (".containsCIDR(cidr('2001:db8::/126'))", 5, 9),
        (".containsCIDR(cidr('2001:db8::/32'))", 5, 9),
        (".containsCIDR('2001:db8::/126')", 5, 9),
        (".containsCIDR('2001:db8::/32')", 5, 9),
        (".containsIP(ip('2001:db8:3333:4444:5555:6666:7777:8888'))", 5, 8),
        (".containsIP(ip('2001:db8::1'))", 3, 6),
        (".containsIP('2001:db8:3333:4444:5555:6666:7777:8888')", 5, 8),
        (".containsIP('2001:db8::1')", 3, 6),
    ]
    for base, ops in (("cidr('192.168.0.0/16')", v4), ("cidr('2001:db8::/32')", v6)):
        for op, lo, hi in ops:
            out.append(LibCase("TestCIDRCost", base + op, base + op, 2 + lo, 2 + hi))
    return out


# TestStringLibrary (without jsonpatch.escapeKey, not in the CRD environment),
# TestQuantityCost, TestNameFormatCost, TestSetsCost, TestSemverCost,
# TestTwoVariableComprehensionCost.
_NAMED = [
    LibCase("TestStringLibrary", "lowerAscii", "'ABCDEFGHIJ abcdefghij'.lowerAscii()", 3, 3),
    LibCase(
        "TestStringLibrary",
        "lowerAsciiEquals",
        "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()",
        7,
        9,
    ),
    LibCase("TestStringLibrary", "upperAscii", "'ABCDEFGHIJ abcdefghij'.upperAscii()", 3, 3),
    LibCase(
        "TestStringLibrary",
        "upperAsciiEquals",
        "'ABCDEFGHIJ abcdefghij'.upperAscii() == 'abcdefghij ABCDEFGHIJ'.upperAscii()",
        7,
        9,
    ),
    LibCase("TestStringLibrary", "quote", "strings.quote('ABCDEFGHIJ abcdefghij')", 3, 3),
    LibCase(
        "TestStringLibrary",
        "quoteEquals",
        "strings.quote('ABCDEFGHIJ abcdefghij') == strings.quote('ABCDEFGHIJ abcdefghij')",
        7,
        11,
    ),
    LibCase("TestStringLibrary", "replace", "'abc 123 def 123'.replace('123', '456')", 3, 3),
    LibCase(
        "TestStringLibrary", "replace between all chars", "'abc 123 def 123'.replace('', 'x')", 3, 3
    ),
    LibCase(
        "TestStringLibrary", "replace with empty", "'abc 123 def 123'.replace('123', '')", 3, 3
    ),
    LibCase(
        "TestStringLibrary",
        "replace with limit",
        "'abc 123 def 123'.replace('123', '456', 1)",
        3,
        3,
    ),
    LibCase("TestStringLibrary", "split", "'abc 123 def 123'.split(' ')", 3, 3),
    LibCase("TestStringLibrary", "split with limit", "'abc 123 def 123'.split(' ', 1)", 3, 3),
    LibCase("TestStringLibrary", "substring", "'abc 123 def 123'.substring(5)", 2, 2),
    LibCase("TestStringLibrary", "substring with end", "'abc 123 def 123'.substring(5, 8)", 2, 2),
    LibCase("TestStringLibrary", "trim", "'  abc 123 def 123  '.trim()", 2, 2),
    LibCase(
        "TestStringLibrary",
        "join with separator",
        "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')",
        11,
        23,
    ),
    LibCase(
        "TestStringLibrary",
        "join",
        "['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join()",
        10,
        22,
    ),
    LibCase("TestStringLibrary", "find", "'abc 123 def 123'.find('123')", 2, 2),
    LibCase("TestStringLibrary", "findAll", "'abc 123 def 123'.findAll('123')", 2, 2),
    LibCase("TestStringLibrary", "findAll with limit", "'abc 123 def 123'.findAll('123', 1)", 2, 2),
    LibCase("TestQuantityCost", "path", 'quantity("12Mi")', 1, 1),
    LibCase("TestQuantityCost", "isQuantity", 'isQuantity("20")', 1, 1),
    LibCase("TestQuantityCost", "isQuantity_megabytes", 'isQuantity("20M")', 1, 1),
    LibCase(
        "TestQuantityCost", "equality_reflexivity", 'quantity("200M") == quantity("200M")', 3, 3
    ),
    LibCase(
        "TestQuantityCost",
        "equality_symmetry",
        'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
        3,
        6,
    ),
    LibCase(
        "TestQuantityCost",
        "equality_transitivity",
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")',
        3,
        9,
    ),
    LibCase(
        "TestQuantityCost", "quantity_less", 'quantity("50M").isLessThan(quantity("50Mi"))', 3, 3
    ),
    LibCase(
        "TestQuantityCost",
        "quantity_greater",
        'quantity("50Mi").isGreaterThan(quantity("50M"))',
        3,
        3,
    ),
    LibCase(
        "TestQuantityCost",
        "compare_equal",
        'quantity("200M").compareTo(quantity("0.2G")) > 0',
        4,
        4,
    ),
    LibCase(
        "TestQuantityCost",
        "add_quantity",
        'quantity("50k").add(quantity("20")) == quantity("50.02k")',
        5,
        5,
    ),
    LibCase(
        "TestQuantityCost",
        "sub_quantity",
        'quantity("50k").sub(quantity("20")) == quantity("49.98k")',
        5,
        5,
    ),
    LibCase("TestQuantityCost", "sub_int", 'quantity("50k").sub(20) == quantity("49980")', 4, 4),
    LibCase(
        "TestQuantityCost",
        "arith_chain_1",
        'quantity("50k").add(20).sub(quantity("100k")).asInteger() > 0',
        6,
        6,
    ),
    LibCase(
        "TestQuantityCost",
        "arith_chain",
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() > 0',
        7,
        7,
    ),
    LibCase("TestQuantityCost", "as_integer", 'quantity("50k").asInteger() > 0', 3, 3),
    LibCase("TestQuantityCost", "is_integer", 'quantity("50").isInteger()', 2, 2),
    LibCase("TestQuantityCost", "as_float", 'quantity("50.703k").asApproximateFloat() > 0.0', 3, 3),
    LibCase("TestNameFormatCost", "format.named", 'format.named("dns1123subdomain")', 1, 1),
    LibCase(
        "TestNameFormatCost",
        "format.dns1123Subdomain.validate",
        'format.named("dns1123Subdomain").value().validate("my-name")',
        34,
        34,
    ),
    LibCase(
        "TestNameFormatCost",
        "format.dns1123label.validate",
        'format.named("dns1123Label").value().validate("my-name")',
        34,
        34,
    ),
    LibCase(
        "TestNameFormatCost",
        "format.dns1123label.validate",
        'format.named("dns1123Label").value().validate("my-name")',
        34,
        34,
    ),
    LibCase(
        "TestNameFormatCost",
        "format.dns1123label.validate",
        'format.named("dns1123Label").value() == format.named("dns1123Label").value()',
        5,
        11,
    ),
    LibCase("TestSetsCost", "sets", "sets.contains([], [])", 21, 21),
    LibCase("TestSetsCost", "sets", "sets.contains([1], [])", 21, 21),
    LibCase("TestSetsCost", "sets", "sets.contains([1], [1])", 22, 22),
    LibCase("TestSetsCost", "sets", "sets.contains([1], [1, 1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.contains([1, 1], [1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.contains([2, 1], [1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.contains([1, 2, 3, 4], [2, 3])", 29, 29),
    LibCase("TestSetsCost", "sets", "sets.contains([1], [1.0, 1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.contains([1, 2], [2u, 2.0])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.contains([1, 2u], [2, 2.0])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.contains([1, 2.0, 3u], [1.0, 2u, 3])", 30, 30),
    LibCase("TestSetsCost", "sets", "sets.contains([[1], [2, 3]], [[2, 3.0]])", 53, 53),
    LibCase("TestSetsCost", "sets", "!sets.contains([1], [2])", 23, 23),
    LibCase("TestSetsCost", "sets", "!sets.contains([1], [1, 2])", 24, 24),
    LibCase("TestSetsCost", "sets", '!sets.contains([1], ["1", 1])', 24, 24),
    LibCase("TestSetsCost", "sets", "!sets.contains([1], [1.1, 1u])", 24, 24),
    LibCase("TestSetsCost", "sets", "sets.equivalent([], [])", 21, 21),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1], [1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1], [1, 1])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1, 1], [1])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1], [1u, 1.0])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1], [1u, 1.0])", 25, 25),
    LibCase("TestSetsCost", "sets", "sets.equivalent([1, 2, 3], [3u, 2.0, 1])", 39, 39),
    LibCase("TestSetsCost", "sets", "sets.equivalent([[1.0], [2, 3]], [[1], [2, 3.0]])", 69, 69),
    LibCase("TestSetsCost", "sets", "!sets.equivalent([2, 1], [1])", 26, 26),
    LibCase("TestSetsCost", "sets", "!sets.equivalent([1], [1, 2])", 26, 26),
    LibCase("TestSetsCost", "sets", "!sets.equivalent([1, 2], [2u, 2, 2.0])", 34, 34),
    LibCase("TestSetsCost", "sets", "!sets.equivalent([1, 2], [1u, 2, 2.3])", 34, 34),
    LibCase("TestSetsCost", "sets", "sets.intersects([1], [1])", 22, 22),
    LibCase("TestSetsCost", "sets", "sets.intersects([1], [1, 1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.intersects([1, 1], [1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.intersects([2, 1], [1])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.intersects([1], [1, 2])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.intersects([1], [1.0, 2])", 23, 23),
    LibCase("TestSetsCost", "sets", "sets.intersects([1, 2], [2u, 2, 2.0])", 27, 27),
    LibCase("TestSetsCost", "sets", "sets.intersects([1, 2], [1u, 2, 2.3])", 27, 27),
    LibCase("TestSetsCost", "sets", "sets.intersects([[1], [2, 3]], [[1, 2], [2, 3.0]])", 65, 65),
    LibCase("TestSetsCost", "sets", "!sets.intersects([], [])", 22, 22),
    LibCase("TestSetsCost", "sets", "!sets.intersects([1], [])", 22, 22),
    LibCase("TestSetsCost", "sets", "!sets.intersects([1], [2])", 23, 23),
    LibCase("TestSetsCost", "sets", '!sets.intersects([1], ["1", 2])', 24, 24),
    LibCase("TestSetsCost", "sets", "!sets.intersects([1], [1.1, 2u])", 24, 24),
    LibCase("TestSemverCost", "semver", 'semver("1.0.0")', 1, 1),
    LibCase(
        "TestSemverCost", "semver long input", 'semver("1234.56789012345.67890123456789")', 4, 4
    ),
    LibCase("TestSemverCost", "isSemver", 'isSemver("1.0.0")', 1, 1),
    LibCase(
        "TestSemverCost", "isSemver long input", 'isSemver("1234.56789012345.67890123456789")', 4, 4
    ),
    LibCase("TestSemverCost", "major", 'semver("1.2.3").major()', 2, 2),
    LibCase("TestSemverCost", "minor", 'semver("1.2.3").minor()', 2, 2),
    LibCase("TestSemverCost", "patch", 'semver("1.2.3").patch()', 2, 2),
    LibCase("TestSemverCost", "isLessThan", 'semver("1.0.0").isLessThan(semver("1.1.0"))', 3, 3),
    LibCase(
        "TestSemverCost", "isGreaterThan", 'semver("1.1.0").isGreaterThan(semver("1.0.0"))', 3, 3
    ),
    LibCase("TestSemverCost", "compareTo", 'semver("1.0.0").compareTo(semver("1.2.3"))', 3, 3),
    LibCase(
        "TestTwoVariableComprehensionCost", "map all", "{'a': 1, 'b': 2}.all(k, v, v > 0)", 37, 41
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map exists",
        "{'a': 1, 'b': 2}.exists(k, v, v > 0)",
        39,
        43,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map existsOne",
        "{'a': 1, 'b': 2}.existsOne(k, v, v > 0)",
        38,
        40,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map transformMap",
        "{'a': 1, 'b': 2}.transformMap(k, v, v + 1)",
        71,
        71,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map transformMap with filter",
        "{'a': 1, 'b': 2}.transformMap(k, v, v < 5, v + 1)",
        67,
        75,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map transformMapEntry",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, {k: v + 1})",
        131,
        131,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "map transformMapEntry with filter",
        "{'a': 1, 'b': 2}.transformMapEntry(k, v, v < 5, {k: v + 1})",
        67,
        135,
    ),
    LibCase("TestTwoVariableComprehensionCost", "list all", "[1, 2].all(i, v, v > 0)", 17, 21),
    LibCase(
        "TestTwoVariableComprehensionCost", "list exists", "[1, 2].exists(i, v, v > 0)", 19, 23
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "list existsOne",
        "[1, 2].existsOne(i, v, v > 0)",
        18,
        20,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "list transformList",
        "[1, 2].transformList(i, v, v + 1)",
        49,
        49,
    ),
    LibCase(
        "TestTwoVariableComprehensionCost",
        "list transformList with filter",
        "[1, 2].transformList(i, v, v < 5, v + 1)",
        27,
        53,
    ),
]

LIBRARY_CASES: list[LibCase] = [*_lists_cases(), *_url_cases(), *_ip_cases(), *_NAMED]


# ---------------------------------------------------------------- differential cases

# Rule templates over DIFF_SCHEMA for the cross-check with ../shared/tools/crd-cel-cost:
# every construct the estimator models, combined at random (fixed seed) with random bounds.
DIFF_STRINGS = [
    "self.s",
    "self.e",
    "'lit'",
    "self.objs[0].name",
    "self.m['k']",
    "self.strs[0]",
    "self.s.lowerAscii()",
    "self.s + self.e",
    "self.s.trim()",
    "self.s.substring(1)",
    "self.s.replace('a', 'bb')",
    "self.strs.join(',')",
    "string(self.i)",
    "self.s.split('/')[0]",
]
DIFF_PREDICATES = [
    "x.name == 'a'",
    "has(x.name)",
    "x.n > 3",
    "x.name.startsWith(self.s)",
    "x.tags.exists(t, t == x.name)",
    "x.name.matches('^a')",
]
DIFF_RULES = [
    "{s}.startsWith({t})",
    "{s}.endsWith({t})",
    "{s}.contains({t})",
    "{s}.matches('^[a-z]+$')",
    "{s} == {t}",
    "{s} < {t}",
    "size({s}) <= 10",
    "self.objs.all(x, {p})",
    "self.objs.exists(x, {p})",
    "self.objs.exists_one(x, {p})",
    "self.strs.all(t, t.startsWith('a'))",
    "self.m.all(k, k.matches('a') && self.m[k].size() < 5)",
    "self.mo.exists(k, self.mo[k].n > 1)",
    "self.objs.filter(x, {p}).size() > 1",
    "self.objs.map(x, x.name).all(y, y.size() > 2)",
    "self.objs.filter(x, {p})[0].name == 'a'",
    "self.objs.map(x, x.tags).all(t, t.size() > 0)",
    "{s} in self.strs",
    "'k' in self.m",
    "self.strs.isSorted()",
    "self.strs.indexOf({s}) > 0",
    "isQuantity({s})",
    "isSemver({s})",
    "self.ios == 5",
    "type(self.ios) == string",
    "self.d > duration('1s')",
    "self.bs.size() > 1",
    "self.objs.all(x, x.tags.all(t, t != x.name))",
    "self.objs.all(x, self.objs.exists_one(y, y.name == x.name))",
    "[has(self.s), has(self.i)].filter(v, v).size() == 1",
    "self.strs.all(i, v, v.size() > i)",
    "self.m.exists(k, v, v == k)",
    "self.objs.transformList(i, o, o.name).size() > 0",
    "sets.contains(self.strs, ['a'])",
    "self.objs.filter(x, {p}).map(x, x.n).all(n, n > 0)",
    "{s}.size() > 2 ? {s} == 'a' : {t}.size() > 1",
    "!({s} == 'a') || {t} == 'b'",
    "self.s.find('[0-9]+') == ''",
    "self.s.findAll('a').size() > 1",
    "url({s}).getHost() == 'x'",
    "self.objs[0].tags[1].size() > 2",
    "self.s.split(',').exists(t, t == 'a')",
    "self.objs.map(x, x.name + '-').exists(t, t.endsWith('-'))",
    "self.strs + ['a'] == ['b']",
    "size(self.objs) == 2",
    # Rules the API server refuses: both must say so.
    "self.i == 'a'",
    "[1, 'a'].size() > 0",
    "self.objs[0].nmae == 'a'",
    "self.s == null",
    "self.i == 1.0",
]


def diff_schema(rnd: Any) -> Schema:
    """A spec schema with every kind of node, each bound present or not at random."""

    def bound(key: str, s: Schema) -> Schema:
        return {**s, key: rnd.choice([0, 1, 3, 10, 64, 256])} if rnd.random() < 0.5 else s

    def strings() -> Schema:
        return bound("maxItems", {"type": "array", "items": bound("maxLength", {"type": "string"})})

    item: Schema = {
        "type": "object",
        "properties": {
            "name": bound("maxLength", {"type": "string"}),
            "n": {"type": "integer"},
            "tags": strings(),
        },
    }
    if rnd.random() < 0.5:
        item["required"] = ["name"]
    return {
        "type": "object",
        "properties": {
            "s": bound("maxLength", {"type": "string"}),
            "e": {"type": "string", "enum": ["A", "Bcd"]},
            "i": {"type": "integer"},
            "ios": bound("maxLength", {"x-kubernetes-int-or-string": True}),
            "strs": strings(),
            "objs": bound("maxItems", {"type": "array", "items": item}),
            "m": bound(
                "maxProperties",
                {"type": "object", "additionalProperties": bound("maxLength", {"type": "string"})},
            ),
            "mo": bound("maxProperties", {"type": "object", "additionalProperties": item}),
            "d": {"type": "string", "format": "duration"},
            "bs": bound("maxLength", {"type": "string", "format": "byte"}),
        },
    }


def diff_rules(rnd: Any, extra: int) -> list[str]:
    """Every template of DIFF_RULES once, then ``extra`` random pairs joined by ``&&``."""

    def fill(template: str) -> str:
        return template.format(
            s=rnd.choice(DIFF_STRINGS), t=rnd.choice(DIFF_STRINGS), p=rnd.choice(DIFF_PREDICATES)
        )

    rules = [fill(t) for t in DIFF_RULES]
    rules += [
        f"{fill(rnd.choice(DIFF_RULES))} && {fill(rnd.choice(DIFF_RULES))}" for _ in range(extra)
    ]
    return rules


# cost_test.go TestSize: the result size of replace() from the sizes of its target and
# arguments: (name, target, (old, new), expected), each a (min, max) size.
REPLACE_SIZES = [
    ("replace empty with char", (3, 3), ((0, 0), (1, 1)), (7, 7)),
    ("maybe replace char with empty", (3, 3), ((1, 1), (0, 0)), (0, 3)),
    ("maybe replace repeated", (4, 4), ((2, 2), (4, 4)), (4, 8)),
    ("maybe replace empty", (4, 4), ((0, 1), (0, 2)), (0, 14)),
    ("replace non-empty size range, maybe larger", (4, 4), ((1, 1), (1, 2)), (4, 8)),
    ("replace non-empty size range, maybe smaller", (4, 4), ((1, 2), (1, 1)), (2, 4)),
]
