"""Deployments that compose but cannot serve: the warnings of ``validate`` and ``render``.

Every check here reads one ModelDeployment and says, with the field path a fix belongs
at, why its pods would start yet never answer (docs/composition.md "Warnings"). They
are warnings, not errors: the API accepts these documents, and a user may know better
(a custom image, a command the check cannot read). Pure: no files, no clocks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from modelplane.api import ModelDeployment
from modelplane.api.modeldeployment import Engine, EngineMember
from modelplane.api.pod import Container
from modelplane.composition.containers import CACHE_MOUNT_PATH
from modelplane.composition.gangs import LEADER_ADDRESS
from modelplane.composition.members import DEFAULT_HTTP_PORT, ENGINE_CONTAINER

NIXL_CONNECTOR = "NixlConnector"
# vLLM's NIXL side channel binds and advertises this host; it defaults to "localhost"
# (vllm-project/vllm docs/features/nixl_connector_usage.md, vllm/envs.py).
NIXL_SIDE_CHANNEL_HOST = "VLLM_NIXL_SIDE_CHANNEL_HOST"
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})

# vLLM's official images by the DRA driver of the devices they run on, from vllm-project/vllm:
# vllm/vllm-openai for CUDA (docs/deployment/docker.md), vllm/vllm-openai-rocm for ROCm,
# official since January 2026 (docs/getting_started/installation/gpu.rocm.inc.md, its
# pre-built images), vllm/vllm-openai-cpu for CPUs (docs/getting_started/installation/cpu.md,
# its pre-built images). Each is built for its own backend only.
VLLM_IMAGES: dict[str, str] = {
    "gpu.nvidia.com": "vllm/vllm-openai",
    "gpu.amd.com": "vllm/vllm-openai-rocm",
    "dra.cpu": "vllm/vllm-openai-cpu",
}
_ACCELERATOR_NAMES = {"gpu.nvidia.com": "NVIDIA", "gpu.amd.com": "AMD", "dra.cpu": "CPU"}


@dataclass(frozen=True, slots=True)
class ServingWarning:
    """One located warning: a field path of the deployment and why it cannot serve."""

    path: str
    message: str


def serving_warnings(deployment: ModelDeployment) -> list[ServingWarning]:
    """Every warning for one deployment, in engine, member and container order."""
    spec = deployment.spec.template.spec
    engines = list(spec.engines)
    out = [w for i, engine in enumerate(engines) for w in _gang_warnings(i, engine)]
    if spec.serving is not None and spec.serving.mode == "PrefillDecode":
        out += _decode_sidecar_warnings(engines)
    out += [w for i, engine in enumerate(engines) for w in _nixl_warnings(i, engine)]
    out += [w for i, engine in enumerate(engines) for w in _image_warnings(i, engine)]
    if spec.model_cache_ref is not None:
        out += [w for i, engine in enumerate(engines) for w in _cache_model_warnings(i, engine)]
    return out


def _member_path(engine: int, member: int) -> str:
    return f"spec.template.spec.engines[{engine}].members[{member}].template.spec.containers"


def _containers(member: EngineMember) -> list[Container]:
    spec = member.template.spec
    return list(spec.containers) if spec is not None else []


def _texts(container: Container) -> Iterator[str]:
    """Everything a container runs with: command, args and literal env values."""
    yield from container.command or ()
    yield from container.args or ()
    yield from (e.value for e in container.env or () if e.value is not None)


def _mentions(containers: Sequence[Container], word: str) -> bool:
    # A substring, not only $(WORD): a shell command reads $WORD or ${WORD} too.
    return any(word in text for c in containers for text in _texts(c))


def _gang_warnings(index: int, engine: Engine) -> Iterator[ServingWarning]:
    """A Worker none of whose containers names the leader address cannot join its gang."""
    if not any(m.role == "Leader" for m in engine.members):
        return
    for j, member in enumerate(engine.members):
        if member.role == "Worker" and not _mentions(_containers(member), LEADER_ADDRESS):
            yield ServingWarning(
                _member_path(index, j),
                f"engine {engine.name}: no container of the Worker references "
                f"$({LEADER_ADDRESS}): its pods cannot find the leader, so the gang never "
                "forms and the serving pod never becomes ready",
            )


def _serving_member(engine: Engine) -> tuple[int, EngineMember] | None:
    return next(((j, m) for j, m in enumerate(engine.members) if m.role != "Worker"), None)


def _http_port(container: Container | None) -> int:
    ports = container.ports or () if container is not None else ()
    return next((p.container_port for p in ports if p.name == "http"), DEFAULT_HTTP_PORT)


def _engine_container(containers: Sequence[Container]) -> Container | None:
    return next((c for c in containers if c.name == ENGINE_CONTAINER), None)


def _decode_sidecar_warnings(engines: Sequence[Engine]) -> Iterator[ServingWarning]:
    """Decode pods need a routing sidecar, and it, not the engine, owns the pool's port.

    llm-d's picker sends each request to a decode pod, whose sidecar runs the prefill leg
    on the prefill pod the picker named, then hands the request to its local engine
    (llm-d/llm-d-router ``pkg/sidecar/proxy``, ``deploy/components/vllm-decode`` @ v0.10.0).
    The pool targets the Prefill engine's serving port (docs/composition.md, "Warnings").
    """
    prefill = next((e for e in engines if e.phase == "Prefill"), None)
    target = None
    if prefill is not None and (found := _serving_member(prefill)) is not None:
        target = _http_port(_engine_container(_containers(found[1])))
    for i, engine in enumerate(engines):
        found = _serving_member(engine) if engine.phase == "Decode" else None
        if found is None:
            continue
        j, member = found
        containers = _containers(member)
        if not any(c.name != ENGINE_CONTAINER for c in containers):
            yield ServingWarning(
                _member_path(i, j),
                f"engine {engine.name}: the decode pods have no routing sidecar container: "
                "requests reach the decode engine directly and the prefill engine is never "
                "used (llm-d runs its disagg sidecar in front of each decode engine)",
            )
        elif target is not None and _http_port(_engine_container(containers)) == target:
            yield ServingWarning(
                _member_path(i, j),
                f"engine {engine.name}: the decode engine listens on the pool's target port "
                f"{target}, where the routing sidecar must listen; move the engine to "
                "another port (llm-d uses 8200) and point the sidecar at it",
            )


def _nixl_warnings(index: int, engine: Engine) -> Iterator[ServingWarning]:
    """vLLM's NIXL connector needs a side-channel host the other phase can reach."""
    for j, member in enumerate(engine.members):
        for k, container in enumerate(_containers(member)):
            if not _mentions([container], NIXL_CONNECTOR) or _reachable_side_channel(container):
                continue
            yield ServingWarning(
                f"{_member_path(index, j)}[{k}].env",
                f"container {container.name} uses vLLM's {NIXL_CONNECTOR} without a reachable "
                f"{NIXL_SIDE_CHANNEL_HOST}: the KV side channel stays on localhost and pods "
                "of the other phase cannot fetch the KV cache; set it from the downward API "
                "(valueFrom.fieldRef.fieldPath: status.podIP)",
            )


def _reachable_side_channel(container: Container) -> bool:
    entry = next((e for e in container.env or () if e.name == NIXL_SIDE_CHANNEL_HOST), None)
    if entry is None:
        return False
    if entry.value_from is not None:
        return True
    return entry.value is not None and entry.value not in LOOPBACK


def _member_driver(member: EngineMember) -> str | None:
    """The one known DRA driver the member's selectors name, if exactly one."""
    selector = member.node_selector
    texts = [
        s.cel
        for request in (selector.devices if selector is not None else None) or ()
        for s in request.selectors
        if s.cel is not None
    ]
    named = {driver for driver in VLLM_IMAGES if any(driver in text for text in texts)}
    return named.pop() if len(named) == 1 else None


def _repository(image: str) -> str:
    """The image without registry host ``docker.io`` (Docker Hub), tag or digest."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    if colon > slash:
        name = name[:colon]
    return name.removeprefix("docker.io/").removeprefix("index.docker.io/")


def _image_warnings(index: int, engine: Engine) -> Iterator[ServingWarning]:
    """A vLLM image built for another accelerator than the member's devices never starts."""
    for j, member in enumerate(engine.members):
        driver = _member_driver(member)
        if driver is None:
            continue
        wanted = VLLM_IMAGES[driver]
        for k, container in enumerate(_containers(member)):
            repository = _repository(container.image)
            built_for = next((d for d, r in VLLM_IMAGES.items() if r == repository), None)
            if built_for is None or built_for == driver:
                continue
            yield ServingWarning(
                f"{_member_path(index, j)}[{k}].image",
                f"container {container.name} runs {repository}, vLLM's "
                f"{_ACCELERATOR_NAMES[built_for]} image, but the member selects "
                f"{_ACCELERATOR_NAMES[driver]} devices ({driver}): it cannot use them; "
                f"vLLM's image for them is {wanted}",
            )


def _model_arg(args: Sequence[str]) -> str | None:
    """The model the engine's args name: ``--model=X``, ``--model X`` or a first positional
    argument (``vllm serve X``); None when they name none."""
    for i, arg in enumerate(args):
        if arg.startswith("--model="):
            return arg.removeprefix("--model=")
        if arg == "--model":
            return args[i + 1] if i + 1 < len(args) else ""
    if args and not args[0].startswith("-"):
        return args[0]
    return None


def _cache_model_warnings(index: int, engine: Engine) -> Iterator[ServingWarning]:
    """With a ModelCache, every engine loads the weights by repo id from the hub cache.

    An earlier release appended ``--model=/mnt/models`` to a serving engine that named no
    model and staged the weights flat at the mount; now nothing is appended and the mount
    holds the hub cache layout (docs/composition.md, "Pods"), so neither form finds them.
    """
    serving = _serving_member(engine)
    for j, member in enumerate(engine.members):
        for k, container in enumerate(_containers(member)):
            if container.name != ENGINE_CONTAINER:
                continue
            model = _model_arg(container.args or ())
            path = f"{_member_path(index, j)}[{k}].args"
            if model is not None and model.rstrip("/") == CACHE_MOUNT_PATH:
                yield ServingWarning(
                    path,
                    f"engine {engine.name}: --model={CACHE_MOUNT_PATH} loads a flat model "
                    "directory, but the ModelCache is staged in the Hugging Face hub cache "
                    "layout there; use --model=<the cache's huggingFace.repo>, which resolves "
                    "from the cache offline",
                )
            elif (
                model is None
                and container.command is None
                and serving is not None
                and serving[0] == j
            ):
                yield ServingWarning(
                    path,
                    f"engine {engine.name}: the engine names no model (no --model, no command) "
                    f"but mounts a ModelCache: {CACHE_MOUNT_PATH} is no longer passed as "
                    "--model, so vLLM would serve its default model; add --model=<the cache's "
                    "huggingFace.repo>, which resolves from the cache offline",
                )
