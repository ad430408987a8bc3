# The Modelplane composition function image: `modelplane function serve` on port 9443
# (gRPC) and 8080 (Prometheus /metrics, the port Crossplane declares on a Function's pod).
# Crossplane's function runtime mounts the mTLS certificates and sets TLS_SERVER_CERTS_DIR,
# which the command reads. Build from the repository root:
#   docker build -t xpkg.crossplane.io/modelplane/function-modelplane:v0.1.0 .
#   crossplane xpkg build --package-root package/function \
#     --embed-runtime-image xpkg.crossplane.io/modelplane/function-modelplane:v0.1.0

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN python -m venv /venv && /venv/bin/pip install --no-cache-dir .

FROM python:3.11-slim
COPY --from=build /venv /venv
ENV PATH=/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    TLS_SERVER_CERTS_DIR=/tls/server
# Any non-root user: the function needs no privileges.
USER 65532:65532
EXPOSE 9443 8080
ENTRYPOINT ["modelplane", "function", "serve"]
