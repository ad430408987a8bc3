"""The stack table as markdown: the generated part of docs/stack.md.

``tests/stack/test_stack_doc.py`` fails when docs/stack.md differs from this text, so the
page can never drift from the table the code composes from.
"""

from __future__ import annotations

import json

from modelplane.naming import POOL_LABEL
from modelplane.stack.components import COMPONENTS
from modelplane.stack.model import Component, PresentObject, Requirement, ServedApi
from modelplane.stack.vocabulary import BUILTIN_MAPPINGS, SOURCES, VOCABULARY

BEGIN = "<!-- BEGIN GENERATED: modelplane.stack.table_doc -->"
END = "<!-- END GENERATED -->"


def _chart(component: Component) -> str:
    chart = component.chart
    if chart is None:
        return "our own objects"
    return f"`{chart.name}` `{chart.version}` from `{chart.repository}`"


def _requirement(requirement: Requirement) -> str:
    if isinstance(requirement, ServedApi):
        return f"APIService `{requirement.api_service}` ({', '.join(requirement.kinds)})"
    assert isinstance(requirement, PresentObject)
    return f"{requirement.kind} `{requirement.name}`"


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def components_table() -> str:
    """One row per component, in install order."""
    lines = [
        "| component | release | when | installed as | namespace | needs first |",
        "|---|---|---|---|---|---|",
    ]
    for c in COMPONENTS:
        needs = ", ".join(f"`{n}`" for n in c.needs) or "nothing"
        lines.append(
            f"| `{c.name}` ({c.title}) | {c.release} | {c.need.text} | {_chart(c)} | "
            f"{c.namespace or 'cluster-scoped'} | {needs} |"
        )
    return "\n".join(lines)


def values_list() -> str:
    """The values we set, per charted component, each with why."""
    lines: list[str] = []
    for c in COMPONENTS:
        if c.chart is None or not (c.values or c.pool_affinity):
            continue
        lines.append(f"- `{c.name}`:")
        for value in c.values:
            shown = json.dumps(value.values_json(), separators=(", ", ": "))
            lines.append(f"  - `{value.path}` = `{_escape(shown)}`: {value.why}")
        if c.pool_affinity is not None:
            lines.append(
                f"  - `{c.pool_affinity}` = a required node affinity to the pools claiming "
                f"{c.need.value} devices, by their `{POOL_LABEL}` label: its node plugin runs "
                "exactly where replicas claim its devices"
            )
    return "\n".join(lines)


def requirements_list() -> str:
    """What a Provided cluster must serve or carry, per component, and what is not checked."""
    lines: list[str] = []
    for c in COMPONENTS:
        if not c.installs or c.need.kind == "gateway" or not (c.requires or c.unchecked):
            continue
        checked = "; ".join(_requirement(r) for r in c.requires) or "nothing observable"
        lines.append(
            f"- `{c.name}` ({c.title} {c.release} or later, when {c.need.text}): {checked}."
        )
        for note in c.unchecked:
            lines.append(f"  Not checked: {note}.")
    lines.append(
        "- the Gateway `modelplane-system/inference-gateway`, observed: the cluster turns Ready "
        "once it has an address, and routes follow its GatewayClass's implementation."
    )
    return "\n".join(lines)


def sources_list() -> str:
    """Where each component's facts were read."""
    return "\n".join(f"- `{c.name}`: {c.source}." for c in COMPONENTS)


def generated() -> str:
    """The whole generated block, markers included."""
    return "\n\n".join(
        [
            BEGIN,
            "### Components",
            components_table(),
            "### Values we set",
            values_list(),
            "### What a Provided cluster must bring",
            requirements_list(),
            "### Sources",
            sources_list(),
            END,
        ]
    )


def replace_generated(text: str) -> str:
    """``text`` (docs/stack.md) with its generated block made current."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + generated() + text[end:]


# docs/telemetry.md's tables, generated from stack/vocabulary.py the same way.
TELEMETRY_BEGIN = "<!-- BEGIN GENERATED: modelplane.stack.table_doc telemetry -->"


def telemetry_generated() -> str:
    """The vocabulary, the built-in mappings and their sources, as docs/telemetry.md shows them."""
    vocabulary = [
        "### Vocabulary",
        "",
        "| metric | type | unit | across replicas | means |",
        "|---|---|---|---|---|",
        *(
            f"| `{m.name}` | {m.type} | `{m.unit}` | {m.across} | {_escape(m.meaning)} |"
            for m in VOCABULARY
        ),
    ]
    mappings = [
        "### Built-in mappings",
        "",
        "| component | source | vocabulary | converted from |",
        "|---|---|---|---|",
        *(
            f"| {m.component} | `{m.source}` | `{m.target}` | {m.from_unit or ''} |"
            for m in BUILTIN_MAPPINGS
        ),
    ]
    sources = [
        "### Sources",
        "",
        *(f"- `{s.name}` ({s.title} {s.release}): {s.read_from}." for s in SOURCES),
    ]
    return "\n".join([TELEMETRY_BEGIN, "", *vocabulary, "", *mappings, "", *sources, "", END])


def replace_telemetry(text: str) -> str:
    """``text`` with its generated telemetry block replaced by the current one."""
    start, end = text.index(TELEMETRY_BEGIN), text.index(END) + len(END)
    return text[:start] + telemetry_generated() + text[end:]
