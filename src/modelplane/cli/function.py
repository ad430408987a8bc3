"""`modelplane function serve`: the composition functions over gRPC (docs/crossplane.md)."""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from pathlib import Path
from typing import Any

# Standard library only, so importing it keeps the other verbs fast.
from modelplane.cli.main import verb_help
from modelplane.runtime.crossplane.metrics import DEFAULT_METRICS_ADDRESS

DEFAULT_ADDRESS = "0.0.0.0:9443"
CERTS_ENV = "TLS_SERVER_CERTS_DIR"
# The default's bound (runtime/crossplane/workers.py's MAX_DEFAULT_WORKERS, repeated here so
# the help does not import gRPC), and a sanity bound on the flag.
MAX_DEFAULT_WORKERS = 4
MAX_WORKERS = 256
EXAMPLE = """\
examples:
  modelplane function serve --insecure --address 127.0.0.1:9443 --metrics-address '' --debug
  modelplane function serve --insecure --workers 1
  TLS_SERVER_CERTS_DIR=/tls/server modelplane function serve
"""


def register(subparsers: Any) -> None:
    """Add the verb (``function``, with its sub-verb ``serve``) to the command's sub-parsers."""
    parser = subparsers.add_parser(
        "function",
        help=verb_help("function"),
        description="The Crossplane composition functions of Modelplane.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="function_verb", metavar="VERB")
    serve = verbs.add_parser(
        "serve",
        help="serve RunFunction over gRPC",
        description="Serve the ModelDeployment, ModelReplica, InferenceCluster and record "
        "functions over gRPC, as Crossplane calls them (v1 and v1beta1). mTLS unless "
        "--insecure. SIGTERM stops serving and exits 0.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        type=listen_address,
        metavar="HOST:PORT",
        help=f"where to listen (default: {DEFAULT_ADDRESS})",
    )
    serve.add_argument(
        "--insecure", action="store_true", help="serve without TLS (local runs and tests)"
    )
    serve.add_argument(
        "--tls-certs-dir",
        metavar="DIR",
        default=None,
        help=f"directory with tls.crt, tls.key and ca.crt (default: ${CERTS_ENV})",
    )
    serve.add_argument(
        "--metrics-address",
        default=DEFAULT_METRICS_ADDRESS,
        type=optional_listen_address,
        metavar="HOST:PORT",
        help=f"where to serve Prometheus metrics at /metrics over plain HTTP, '' for nowhere "
        f"(default: {DEFAULT_METRICS_ADDRESS}, the port Crossplane declares)",
    )
    serve.add_argument(
        "--workers",
        type=worker_count,
        default=None,
        metavar="N",
        help="processes answering calls, each one call at a time: 1 answers in the serving "
        "process, more are forked and the serving process hands them the calls (default: the "
        "CPUs this process may use, from its CPU affinity and its cgroup's cpu.max quota, at "
        f"most {MAX_DEFAULT_WORKERS})",
    )
    serve.add_argument("--debug", action="store_true", help="log at debug level")
    serve.set_defaults(func=run_serve)
    parser.set_defaults(func=lambda args: _usage(parser))


_HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?\Z")


def listen_address(value: str) -> str:
    """``HOST:PORT`` to listen on, checked like every other flag (a bad one is exit 2).

    HOST is an IPv4 address, a bracketed IPv6 address or a host name (``0.0.0.0`` for
    every interface; gRPC refuses an empty host); PORT is 0 to 65535 (0: any free port). gRPC would otherwise accept
    ``127.0.0.1:99999`` and listen on some other port.
    """
    host, sep, port = value.rpartition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"invalid address {value!r}: want HOST:PORT")
    if not port.isascii() or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(
            f"invalid address {value!r}: the port must be a number from 0 to 65535"
        )
    if not _valid_host(host):
        raise argparse.ArgumentTypeError(
            f"invalid address {value!r}: the host must be an IP address or a host name"
        )
    return value


def worker_count(value: str) -> int:
    """``--workers``: a whole number from 1 to ``MAX_WORKERS``."""
    if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"invalid worker count {value!r}: want a number from 1 to {MAX_WORKERS}"
        )
    return int(value)


def optional_listen_address(value: str) -> str:
    """A listen address, or '' for nowhere (--metrics-address)."""
    return listen_address(value) if value else value


def _valid_host(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        try:
            return ipaddress.ip_address(host[1:-1]).version == 6
        except ValueError:
            return False
    return host.isascii() and bool(_HOST_NAME.match(host)) and len(host) <= 253


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def certs_dir(flag: str | None, environ: Any = os.environ) -> Path | None:
    """The TLS certificates directory: the flag, else $TLS_SERVER_CERTS_DIR (empty: none)."""
    value = flag if flag is not None else environ.get(CERTS_ENV, "")
    return Path(value) if value else None


def run_serve(args: argparse.Namespace) -> int:
    """Serve until SIGTERM; 2 without credentials and without --insecure, 1 if it cannot start."""
    directory = certs_dir(args.tls_certs_dir)
    if not args.insecure and directory is None:
        print(
            "modelplane function serve: error: no TLS certificates: pass --tls-certs-dir DIR, "
            f"set {CERTS_ENV}, or use --insecure",
            file=sys.stderr,
        )
        return 2
    # gRPC is imported only here, so the other verbs start fast.
    from modelplane.runtime.crossplane.server import (
        ServeConfig,
        ServeError,
        configure_logging,
        serve,
    )
    from modelplane.runtime.crossplane.workers import default_workers

    configure_logging(debug=args.debug)
    config = ServeConfig(
        address=args.address,
        insecure=args.insecure,
        tls_certs_dir=directory,
        metrics_address=args.metrics_address or None,
        workers=args.workers if args.workers is not None else default_workers(),
    )
    try:
        return serve(config)
    except ServeError as err:
        print(f"modelplane function serve: error: {err}", file=sys.stderr)
        return 1
