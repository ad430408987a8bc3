"""What a placed replica composes on its inference cluster (docs/composition.md, "Objects, in
order").

Pure functions: no I/O, clock or randomness. ``compose_replica`` is the entry point.
"""

from modelplane.composition.endpoint import model_endpoint
from modelplane.composition.picker import config_checksum, config_text, default_picker_config
from modelplane.composition.replica import (
    ReplicaComposition,
    compose_replica,
    derived_provider_config,
    provider_config_for,
)
from modelplane.composition.types import ComposedObject
from modelplane.events import Event

__all__ = [
    "ComposedObject",
    "Event",
    "ReplicaComposition",
    "compose_replica",
    "config_checksum",
    "config_text",
    "default_picker_config",
    "derived_provider_config",
    "model_endpoint",
    "provider_config_for",
]
