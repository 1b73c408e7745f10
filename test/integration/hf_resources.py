"""xDS resources for proxyless gRPC clients (gRPC A27), written into
holdfast's --xds-dir as DiscoveryResponse-like JSON files.

The set: Listener `echo.test` (api_listener HttpConnectionManager with RDS
over ADS and the router filter) -> RouteConfiguration `echo-routes` ->
Cluster `echo-cluster` (EDS over ADS) -> ClusterLoadAssignment
`echo-cluster` (one weighted locality; gRPC ignores localities without
load_balancing_weight).
"""

import json
import os
from pathlib import Path

TYPE_PREFIX = "type.googleapis.com/"
LDS = TYPE_PREFIX + "envoy.config.listener.v3.Listener"
RDS = TYPE_PREFIX + "envoy.config.route.v3.RouteConfiguration"
CDS = TYPE_PREFIX + "envoy.config.cluster.v3.Cluster"
EDS = TYPE_PREFIX + "envoy.config.endpoint.v3.ClusterLoadAssignment"
ALL_TYPES = (LDS, RDS, CDS, EDS)

TARGET_HOST = "echo.test"
ROUTE_NAME = "echo-routes"
CLUSTER_NAME = "echo-cluster"

_ADS = {"ads": {}, "resource_api_version": "V3"}


def listener() -> dict:
    return {
        "@type": LDS,
        "name": TARGET_HOST,
        "api_listener": {"api_listener": {
            "@type": TYPE_PREFIX + "envoy.extensions.filters.network."
                     "http_connection_manager.v3.HttpConnectionManager",
            # Ignored by gRPC, required by Envoy's validation rules (which
            # holdfast enforces): min_len 1.
            "stat_prefix": "echo",
            "rds": {"route_config_name": ROUTE_NAME, "config_source": _ADS},
            "http_filters": [{
                "name": "router",
                "typed_config": {
                    "@type": TYPE_PREFIX + "envoy.extensions.filters.http.router.v3.Router"},
            }],
        }},
    }


def route_configuration() -> dict:
    return {
        "@type": RDS,
        "name": ROUTE_NAME,
        "virtual_hosts": [{
            "name": "echo",
            "domains": [TARGET_HOST],
            "routes": [{"match": {"prefix": "/"}, "route": {"cluster": CLUSTER_NAME}}],
        }],
    }


def cluster(lb_policy: str = "ROUND_ROBIN", connect_timeout: str = "1s") -> dict:
    """connect_timeout only serves to make two good clusters differ, so that a
    fix after a rejected version is a new version, not a revert."""
    return {
        "@type": CDS,
        "name": CLUSTER_NAME,
        "type": "EDS",
        "eds_cluster_config": {"eds_config": _ADS},
        "connect_timeout": connect_timeout,
        "lb_policy": lb_policy,
    }


def cluster_load_assignment(port: int) -> dict:
    return {
        "@type": EDS,
        "cluster_name": CLUSTER_NAME,
        "endpoints": [{
            "locality": {"region": "test", "zone": "test-a"},
            "load_balancing_weight": 1,
            "lb_endpoints": [{"endpoint": {"address": {"socket_address": {
                "address": "127.0.0.1", "port_value": port}}}}],
        }],
    }


class XdsDir:
    """holdfast's --xds-dir: one file per resource kind, each replaced
    atomically (written beside the directory, then renamed in) so the
    server's poller never sees a partial file."""

    def __init__(self, path: Path, staging: Path):
        self.path = Path(path)
        self.staging = Path(staging)
        self.path.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir(parents=True, exist_ok=True)

    def write(self, file_name: str, *resources: dict) -> None:
        tmp = self.staging / file_name
        tmp.write_text(json.dumps({"resources": list(resources)}, indent=2))
        os.replace(tmp, self.path / file_name)

    def write_all(self, *, endpoint_port: int, lb_policy: str = "ROUND_ROBIN") -> None:
        self.write("listeners.json", listener())
        self.write("routes.json", route_configuration())
        self.write("clusters.json", cluster(lb_policy=lb_policy))
        self.write("endpoints.json", cluster_load_assignment(endpoint_port))

    def set_endpoint(self, port: int) -> None:
        self.write("endpoints.json", cluster_load_assignment(port))

    def set_cluster(self, **kwargs) -> None:
        self.write("clusters.json", cluster(**kwargs))
