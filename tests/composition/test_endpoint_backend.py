"""A ModelEndpoint is routable (issue 17): its Service and EndpointSlice, or InvalidURL.

The EndpointSlice fields follow kubernetes/api discovery/v1 (types.go at v0.34.0):
addressType IPv4, IPv6 or FQDN, ports by name matching the Service's port, and the
``kubernetes.io/service-name`` label that ties a slice to its Service.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelplane.api import ModelEndpoint
from modelplane.composition.backend import InvalidURL, parse_target
from modelplane.naming import SERVICE_NAME_LABEL, backend_service_name
from modelplane.reconcile.endpoint import converged, reconcile_endpoint

from .schemas import validate_manifest

OBSERVED = ("backend-service", "backend-endpointslice")


def endpoint(url: str, name: str = "openai-overflow", namespace: str = "ml-team") -> ModelEndpoint:
    """A hand-written ModelEndpoint."""
    return ModelEndpoint.model_validate(
        {"metadata": {"name": name, "namespace": namespace}, "spec": {"url": url}}
    )


# url, host, port, addressType
VALID = [
    ("https://api.openai.com/v1", "api.openai.com", 443, "FQDN"),
    ("http://inference.example.com/v1", "inference.example.com", 80, "FQDN"),
    ("HTTPS://API.Example.COM:8443/v1", "api.example.com", 8443, "FQDN"),
    ("http://203.0.113.7/ml-team/llama-3-1-8b-a1b2c/v1", "203.0.113.7", 80, "IPv4"),
    ("http://10.0.0.1:8080/v1", "10.0.0.1", 8080, "IPv4"),
    ("http://[2001:db8::1]:8000/v1", "2001:db8::1", 8000, "IPv6"),
    ("https://[2001:db8::2]/v1", "2001:db8::2", 443, "IPv6"),
]

# url, the words the message must contain
INVALID = [
    ("ftp://files.example.com/model", "scheme must be http or https"),
    ("api.openai.com/v1", "scheme must be http or https"),
    ("https:///v1", "has no host"),
    ("http://bad_host.example.com/v1", "not a valid host name"),
    ("http://host.example.com:99999/v1", "not a valid URL"),
    ("http://host.example.com:0/v1", "port 0"),
    ("https://user:secret@api.example.com/v1", "credentials"),
    ("http://[2001:db8::1/v1", "not a valid URL"),
]


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_service_and_slice_point_at_the_url(
    url: str, host: str, port: int, address_type: str
) -> None:
    result = reconcile_endpoint(endpoint(url), OBSERVED)
    service, endpoint_slice = (o.object for o in result.objects)
    name = backend_service_name("openai-overflow")
    assert service["kind"] == "Service" and service["metadata"]["name"] == name
    assert "selector" not in service["spec"]  # selectorless: the slice is its only source
    assert [p["port"] for p in service["spec"]["ports"]] == [port]
    assert endpoint_slice["addressType"] == address_type
    assert endpoint_slice["endpoints"] == [{"addresses": [host], "conditions": {"ready": True}}]
    assert endpoint_slice["metadata"]["labels"][SERVICE_NAME_LABEL] == name
    # The slice's port joins the Service's port by name.
    assert endpoint_slice["ports"][0]["name"] == service["spec"]["ports"][0]["name"]
    assert endpoint_slice["ports"][0]["port"] == port
    assert result.status.routing is not None and result.status.routing.backend_name == name
    assert [(c.type, c.status, c.reason) for c in result.conditions] == [
        ("RoutingReady", "True", "BackendReady")
    ]


@pytest.mark.parametrize(("url", "host", "port", "address_type"), VALID)
def test_backend_objects_are_valid_kubernetes(
    url: str, host: str, port: int, address_type: str
) -> None:
    for composed in reconcile_endpoint(endpoint(url), OBSERVED).objects:
        validate_manifest(composed.object)


@pytest.mark.parametrize(("url", "words"), INVALID)
def test_invalid_url_composes_nothing_and_warns(url: str, words: str) -> None:
    result = reconcile_endpoint(endpoint(url), OBSERVED)
    assert result.objects == []
    [routing] = result.conditions
    assert (routing.type, routing.status, routing.reason) == ("RoutingReady", "False", "InvalidURL")
    assert routing.message is not None and words in routing.message
    assert routing.message.startswith("spec.url: ")
    assert [e.severity for e in result.events] == ["Warning"]
    assert "ml-team/openai-overflow" in result.events[0].message
    assert result.status.routing is not None and result.status.routing.backend_name is None


def test_backend_name_is_published_only_once_observed() -> None:
    first = reconcile_endpoint(endpoint("https://api.openai.com/v1"), ())
    assert first.status.routing is not None and first.status.routing.backend_name is None
    assert [(c.status, c.reason) for c in first.conditions] == [("False", "Configuring")]
    assert not first.ready
    half = reconcile_endpoint(endpoint("https://api.openai.com/v1"), OBSERVED[:1])
    assert half.status.routing is not None and half.status.routing.backend_name is None
    later = reconcile_endpoint(endpoint("https://api.openai.com/v1"), converged(first))
    assert later.ready and later.objects == first.objects


def test_rewrite_path_is_kept_on_the_endpoint() -> None:
    given_endpoint = ModelEndpoint.model_validate(
        {
            "metadata": {"name": "r", "namespace": "ml-team"},
            "spec": {"url": "http://203.0.113.7/ml-team/r/v1", "rewritePath": "/ml-team/r/"},
        }
    )
    assert given_endpoint.to_wire()["spec"]["rewritePath"] == "/ml-team/r/"


@given(st.integers(min_value=1, max_value=65535), st.sampled_from(["http", "https"]))
def test_explicit_port_wins(port: int, scheme: str) -> None:
    assert parse_target(f"{scheme}://model.example.com:{port}/v1").port == port


@given(st.text(max_size=40))
def test_any_text_is_a_target_or_invalid(url: str) -> None:
    try:
        target = parse_target(url)
    except InvalidURL:
        return
    assert target.scheme in {"http", "https"} and 1 <= target.port <= 65535
    checked: Any = target.address_type
    assert checked in {"IPv4", "IPv6", "FQDN"}
