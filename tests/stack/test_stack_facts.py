"""Every composition fact read at an upstream release names the release the stack installs.

A fact (an env order, a naming rule, how a gateway reaches the picker) holds for the release
it was read at. The stack table pins what clusters run; when one moves without the other,
this fails, so the fact is read again at the new tag before the bump ships.
"""

from __future__ import annotations

import pytest

from modelplane.composition import gangs, routing
from modelplane.stack.components import component

FACTS = [
    # (where the fact lives, the release it was read at, the component installing it)
    ("composition/gangs.py LWS_FACTS_RELEASE", gangs.LWS_FACTS_RELEASE, "lws"),
    ("composition/gangs.py GROVE_FACTS_RELEASE", gangs.GROVE_FACTS_RELEASE, "grove"),
    (
        "composition/routing.py AI_GATEWAY_FACTS_RELEASE",
        routing.AI_GATEWAY_FACTS_RELEASE,
        "envoy-ai-gateway",
    ),
]


@pytest.mark.parametrize(("where", "read_at", "name"), FACTS, ids=[f[2] for f in FACTS])
def test_fact_release_is_the_installed_release(where: str, read_at: str, name: str) -> None:
    installed = component(name).release
    assert read_at == installed, (
        f"{where} was read at {read_at}, but the stack installs {name} {installed}: "
        "re-read the fact at the new release, then move its version"
    )
