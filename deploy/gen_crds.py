#!/usr/bin/env python3
"""Generates deploy/crds/*.yaml, holdfast's CustomResourceDefinitions
(holdfast.dev/v1), from the one description below.

The description follows the decoder (src/model/decode.cc) field by field:
same names, required fields, ranges, enums and defaults; and the decoder's
rules across fields (exactly one route action, one string matcher, either
TLS files or a secret reference, ...) as CEL validation rules
(x-kubernetes-validations). What a schema cannot check is listed in
NOT_EXPRESSIBLE and in docs/kubernetes.md; test/kube/test_crds.py checks
both directions against a real API server and `holdfast validate`.

  python3 deploy/gen_crds.py           rewrite deploy/crds/
  python3 deploy/gen_crds.py --check   exit 1 if deploy/crds/ is not what
                                       this file generates
  python3 deploy/gen_crds.py --not-expressible
                                       list the decoder's rules no schema checks
"""

import argparse
import copy
import sys
from pathlib import Path

import yaml

GROUP = "holdfast.dev"
VERSION = "v1"
OUT = Path(__file__).resolve().parent / "crds"

# Bounds on sizes. The decoder has none; a CRD needs some so that the API
# server can bound the cost of its CEL rules (it refuses a CRD whose worst
# case is too expensive). They are far above any real configuration.
MAX_ROUTES = 1000
MAX_LIST = 256        # hosts, domains, references, header edits
MAX_MATCHERS = 64     # header and query parameter matchers of one route
MAX_STRING = 4096     # bodies, regexes, rewrites
MAX_NAME = 253        # object names (DNS subdomain)
MAX_DURATION = 64

# Rules of the decoder that no schema can check, and where they are checked.
NOT_EXPRESSIBLE = [
    "regexes compile under RE2 (match.regex, header/query regex, cors.allowOriginRegexes): "
    "CEL has no regex-validity test; the decoder rejects the object",
    "references resolve (upstreams, route tables, virtual services, secrets): "
    "cross-object, the translator reports them (Warning or Rejected)",
    "no delegation cycle, no domain served twice on a gateway, no two gateways on "
    "one address and port: cross-object, translator",
    "a route table's routes stay under the delegating route's prefix: cross-object, "
    "translator",
    "a duration's value fits (absl accepts durations longer than Go's ~290 years): "
    "the schema checks the form only",
    "unknown fields are refused only when the client asks for strict field "
    "validation (kubectl's default; the API's default only warns and drops them)",
]

# --- the vocabulary -------------------------------------------------------------------


def string(description="", *, min_length=None, max_length=MAX_STRING, pattern=None,
           enum=None, default=None):
    s = {"type": "string"}
    if description:
        s["description"] = description
    if enum is not None:
        s["enum"] = list(enum)
    else:
        if min_length is not None:
            s["minLength"] = min_length
        if max_length is not None:
            s["maxLength"] = max_length
        if pattern is not None:
            s["pattern"] = pattern
    if default is not None:
        s["default"] = default
    return s


def name(description="Name of an object in the same namespace unless namespace is set."):
    return string(description, min_length=1, max_length=MAX_NAME)


def integer(description="", *, minimum=None, maximum=None, fmt="int64", default=None):
    s = {"type": "integer", "format": fmt}
    if description:
        s["description"] = description
    if minimum is not None:
        s["minimum"] = minimum
    if maximum is not None:
        s["maximum"] = maximum
    if default is not None:
        s["default"] = default
    return s


def uint32(description="", *, minimum=0, maximum=2**32 - 1, default=None):
    return integer(description, minimum=minimum, maximum=maximum, default=default)


def int_enum(values, description=""):
    s = {"type": "integer", "format": "int64", "enum": list(values)}
    if description:
        s["description"] = description
    return s


def boolean(description="", default=None):
    s = {"type": "boolean"}
    if description:
        s["description"] = description
    if default is not None:
        s["default"] = default
    return s


# The decoder's durations are absl durations: a sequence of decimal numbers
# with units (1h30m, 1.5s, 250ms). It also takes a bare number of seconds,
# which the schema does not: on Kubernetes a duration is written with a unit.
DURATION_PATTERN = r"^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|ms|s|m|h))+$"


def duration(description="", *, positive=False):
    s = string(description + (" Written with units: 500ms, 5s, 1m, 1h30m."),
               max_length=MAX_DURATION, pattern=DURATION_PATTERN)
    s["description"] = s["description"].strip()
    if positive:
        # Greater than zero: some digit is not 0.
        s["x-kubernetes-validations"] = [
            {"rule": "self.matches('[1-9]')", "message": "must be greater than zero"}]
    return s


def array(items, description="", *, max_items=MAX_LIST, min_items=None):
    s = {"type": "array", "items": items}
    if description:
        s["description"] = description
    if min_items is not None:
        s["minItems"] = min_items
    s["maxItems"] = max_items
    return s


def string_map(description=""):
    s = {"type": "object", "additionalProperties": string(max_length=MAX_STRING),
         "maxProperties": MAX_LIST}
    if description:
        s["description"] = description
    return s


def obj(properties, description="", *, required=(), rules=()):
    s = {"type": "object"}
    if description:
        s["description"] = description
    s["properties"] = properties
    if required:
        s["required"] = list(required)
    if rules:
        s["x-kubernetes-validations"] = [{"rule": r, "message": m} for r, m in rules]
    return s


def exactly_one(fields, what):
    terms = ", ".join(f"has(self.{f})" for f in fields)
    return (f"[{terms}].filter(x, x).size() == 1", f"{what}: set exactly one of "
            + ", ".join(fields))


def at_most_one(fields, what):
    terms = ", ".join(f"has(self.{f})" for f in fields)
    return (f"[{terms}].filter(x, x).size() <= 1", f"{what}: set only one of "
            + ", ".join(fields))


def nonempty(field):
    return f"(has(self.{field}) && self.{field} != '')"


# --- shared parts ------------------------------------------------------------------------

REF = obj({"name": name("Name of the object."),
           "namespace": name("Namespace; default: the referring object's.")},
          "A reference to another object.", required=["name"])

SELECTOR = obj({
    "labels": string_map("Every label must match."),
    "namespaces": array(string(max_length=MAX_NAME),
                        "Namespaces to look in; default the selecting object's; [\"*\"]: all."),
}, "Objects selected by labels.")

MATCHERS = ["exact", "prefix", "suffix", "regex", "present"]


def string_matcher(extra, what):
    props = dict(extra)
    props.update({
        "exact": string("Equal to."),
        "prefix": string("Starts with."),
        "suffix": string("Ends with."),
        "regex": string("Matches this RE2 regular expression (whole value)."),
        "present": boolean("Present, with any value."),
    })
    return obj(props, required=["name"], rules=[exactly_one(MATCHERS, what)])


HEADER_EDITS = obj({
    "add": string_map("Headers appended."),
    "set": string_map("Headers overwritten."),
    "remove": array(string(max_length=MAX_NAME), "Headers removed."),
})

PATH_RULES = [
    at_most_one(["prefix", "exact", "regex"], "path"),
    ("!has(self.prefix) || self.prefix == '' || self.prefix.startsWith('/')",
     "prefix: path must start with /"),
    ("!has(self.exact) || self.exact == '' || self.exact.startsWith('/')",
     "exact: path must start with /"),
]

ROUTE_MATCH = obj({
    "prefix": string("Path prefix; the default is /."),
    "exact": string("Exact path."),
    "regex": string("Path regular expression (RE2)."),
    "headers": array(string_matcher({"name": string("Header name.", min_length=1,
                                                    max_length=MAX_NAME),
                                     "invert": boolean("Match when the matcher does not.")},
                                    "header match"),
                     "Every header matcher must match.", max_items=MAX_MATCHERS),
    "queryParams": array(string_matcher({"name": string("Query parameter name.", min_length=1,
                                                        max_length=MAX_NAME)},
                                        "query parameter match"),
                         "Every query parameter matcher must match (not used by gRPC clients).",
                         max_items=MAX_MATCHERS),
    "methods": array(string(max_length=32), "HTTP methods, any case."),
}, "What a request must look like; default: every path.", rules=PATH_RULES)

RETRIES = obj({
    "retryOn": string("Envoy retry_on conditions; default 5xx,connect-failure,reset."),
    "numRetries": uint32(minimum=0, maximum=100),
    "perTryTimeout": duration("Timeout of each try."),
})

CORS = obj({
    "allowOrigins": array(string(), "Allowed origins, exactly."),
    "allowOriginRegexes": array(string(), "Allowed origins, as RE2 regular expressions."),
    "allowMethods": array(string(max_length=32)),
    "allowHeaders": array(string(max_length=MAX_NAME)),
    "exposeHeaders": array(string(max_length=MAX_NAME)),
    "maxAge": duration(),
    "allowCredentials": boolean(),
}, rules=[("(has(self.allowOrigins) && size(self.allowOrigins) > 0) || "
           "(has(self.allowOriginRegexes) && size(self.allowOriginRegexes) > 0)",
           "allowOrigins or allowOriginRegexes is required")])

MIRROR = obj({
    "upstream": name("Upstream that receives a copy of each request; its answers are ignored."),
    "namespace": name("Upstream namespace; default the route's."),
    "percent": uint32("Share of requests mirrored, in percent; default 100.", maximum=100),
    "fraction": obj({
        "numerator": uint32(),
        "denominator": uint32("Default 100.", minimum=1),
    }, "Share of requests mirrored, as a fraction.", required=["numerator"],
        rules=[("self.numerator <= (has(self.denominator) ? self.denominator : 100)",
                "numerator must not exceed denominator")]),
}, required=["upstream"], rules=[at_most_one(["percent", "fraction"], "mirror")])

OPTIONS = obj({
    "prefixRewrite": string("Rewrite the matched path prefix."),
    "hostRewrite": string("Rewrite the Host header.", max_length=MAX_NAME),
    "timeout": duration("Whole-request timeout."),
    "retries": RETRIES,
    "requestHeaders": HEADER_EDITS,
    "responseHeaders": HEADER_EDITS,
    "cors": CORS,
    "mirrors": array(MIRROR, "Copies of requests sent elsewhere (Envoy; gRPC clients do not "
                     "mirror).", max_items=16),
})

WEIGHTED = obj({
    "name": name("Upstream name."),
    "namespace": name("Upstream namespace; default the route's."),
    "weight": uint32("Relative weight; 0 drains.", maximum=1_000_000),
}, required=["name"])

ACTIONS = ["upstream", "upstreams", "redirect", "directResponse", "delegate"]

ROUTE = obj({
    "name": string("Shown in Envoy stats and errors.", max_length=MAX_NAME),
    "match": ROUTE_MATCH,
    "upstream": name("Route to this upstream (same namespace)."),
    "upstreams": array(WEIGHTED, "Weighted split between upstreams."),
    "redirect": obj({
        "host": string(max_length=MAX_NAME),
        "path": string(),
        "prefixRewrite": string(),
        "https": boolean(),
        "port": uint32("Port of the redirect; default the request's.", minimum=1, maximum=65535),
        "code": int_enum([301, 302, 303, 307, 308], "Default 301."),
    }, rules=[(f"!({nonempty('path')} && {nonempty('prefixRewrite')})",
               "set only one of path and prefixRewrite")]),
    "directResponse": obj({
        "status": uint32("HTTP status.", minimum=200, maximum=599),
        "body": string(),
    }, required=["status"]),
    "delegate": obj({
        "routeTables": array(REF, "Route tables by name."),
        "selector": SELECTOR,
    }, "Insert the routes of these route tables.",
        rules=[("(has(self.routeTables) && size(self.routeTables) > 0) || has(self.selector)",
                "set routeTables or selector")]),
    "options": OPTIONS,
}, rules=[
    ("[" + ", ".join(f"has(self.{a})" for a in ACTIONS) + "].filter(x, x).size() == 1",
     "a route has exactly one action: upstream, upstreams, redirect, directResponse "
     "or delegate"),
    ("!has(self.upstreams) || (size(self.upstreams) > 0 && "
     "self.upstreams.exists(u, !has(u.weight) || u.weight > 0))",
     "upstreams: list at least one upstream, with weights not all zero"),
])

ROUTES = array(ROUTE, "In match order.", max_items=MAX_ROUTES)

# --- kinds -------------------------------------------------------------------------------

UPSTREAM = obj({
    "hosts": array(obj({
        "address": string("IP address (EDS) or host name (STRICT_DNS, Envoy only).",
                          min_length=1, max_length=MAX_NAME),
        "port": uint32(minimum=1, maximum=65535),
        "weight": uint32(minimum=1, maximum=128),
    }, required=["address", "port"]), "Backend hosts; or service."),
    "service": obj({
        "name": string("Service name, in the Upstream's namespace.", min_length=1,
                       max_length=63, pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
        "port": uint32("Service port number.", minimum=1, maximum=65535),
        "portName": string("Service port name.", min_length=1, max_length=MAX_NAME),
    }, "The endpoints of a Kubernetes Service port (its EndpointSlices); instead of hosts.",
        required=["name"], rules=[exactly_one(["port", "portName"], "service")]),
    "tls": obj({
        "caFile": string("CA bundle on the proxy; empty: not verified (Warning).",
                         max_length=MAX_STRING),
        "sni": string(max_length=MAX_NAME),
    }, "TLS to the hosts."),
    "connectTimeout": duration("Default 5s.", positive=True),
    "loadBalancing": string(enum=["RoundRobin", "LeastRequest", "Random", "RingHash"]),
    "http2": boolean("Speak HTTP/2 to the hosts (gRPC backends). Unset: HTTP/1.1, or for a "
                     "service HTTP/2 when its port's appProtocol is kubernetes.io/h2c or grpc."),
    "circuitBreakers": obj({k: uint32(minimum=1) for k in (
        "maxConnections", "maxPendingRequests", "maxRequests", "maxRetries")}),
    "healthCheck": obj({
        "path": string("HTTP GET path; default /.", pattern="^/"),
        "interval": duration(positive=True),
        "timeout": duration(positive=True),
        "healthyThreshold": uint32(minimum=1, maximum=100),
        "unhealthyThreshold": uint32(minimum=1, maximum=100),
    }),
    "outlierDetection": obj({
        "consecutive5xx": uint32(minimum=1, maximum=1000),
        "interval": duration(positive=True),
        # The decoder takes 0s; Envoy's own validation (which holdfast runs
        # on every resource it serves) refuses it, so the object is Rejected.
        "baseEjectionTime": duration(positive=True),
        "maxEjectionPercent": uint32(minimum=0, maximum=100),
    }),
}, rules=[("has(self.hosts) != has(self.service)", "set exactly one of hosts and service")])

VIRTUAL_SERVICE = obj({
    "domains": array(string(min_length=1, max_length=MAX_NAME),
                     "Exact names or Envoy wildcards (*.example.com).", min_items=1),
    "routes": ROUTES,
}, required=["domains", "routes"])

ROUTE_TABLE = obj({
    "weight": integer("Order among tables delegated to together: lower first.",
                      minimum=-2**31, maximum=2**31 - 1, fmt="int32"),
    "routes": ROUTES,
}, required=["routes"])

ROLLOUT_POLICY = obj({
    "nodeGroup": string("The node group the policy is for; omit it for every group without "
                        "a policy of its own.", min_length=1, max_length=MAX_NAME),
    "canaries": obj({
        "percent": uint32("A stable hash of the node id picks this percentage of the group.",
                          minimum=0, maximum=100),
        "nodeMetadata": obj({
            "key": string(max_length=MAX_NAME),
            "value": string(max_length=MAX_STRING),
        }, "Proxies whose node metadata has key set to the string value.",
            required=["key", "value"]),
    }, "Which proxies get a new configuration first. Neither: none (the group gets every "
       "snapshot at once)."),
    "bake": duration("How long every canary must hold a new snapshot before everyone gets it "
                     "(default 60s)."),
    "ackTimeout": duration("Canaries that have not all ACKed by then hold the rollout "
                           "(default 30s).", positive=True),
})

_files = f"({nonempty('certFile')} || {nonempty('keyFile')})"
CERTIFICATE = {
    "certFile": string("Certificate file on the proxy."),
    "keyFile": string("Key file on the proxy."),
    "secretRef": obj({
        "name": name("On Kubernetes: a Secret of type kubernetes.io/tls (tls.crt, tls.key)."),
        "namespace": name(),
    }, required=["name"]),
}
CERTIFICATE_RULES = [
    (f"!({_files} && has(self.secretRef))", "set either certFile and keyFile, or secretRef"),
    (f"!{_files} || ({nonempty('certFile')} && {nonempty('keyFile')})",
     "set both certFile and keyFile"),
]
GATEWAY = obj({
    "bindAddress": string("Default 0.0.0.0.", max_length=64),
    "port": uint32(minimum=1, maximum=65535),
    "tls": obj({
        **CERTIFICATE,
        "certificates": array(obj({
            "serverNames": array(string(max_length=MAX_NAME,
                                        pattern=r"^(\*\.)?[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
                                 "TLS server names (SNI), exact or with a leading *.",
                                 min_items=1),
            **CERTIFICATE,
        }, required=["serverNames"], rules=CERTIFICATE_RULES + [
            (f"{_files} || has(self.secretRef)", "set either certFile and keyFile, or secretRef"),
        ]), "Certificates chosen by the server name clients send.", max_items=64),
    }, "Terminate TLS: the certificate (certFile and keyFile, or secretRef) for clients "
       "whose server name no entry of certificates lists.", rules=CERTIFICATE_RULES + [
        (f"{_files} || has(self.secretRef) || (has(self.certificates) && "
         "size(self.certificates) > 0)", "set either certFile and keyFile, or secretRef"),
    ]),
    "virtualServices": array(REF, "Virtual services by name."),
    "virtualServiceSelector": SELECTOR,
}, required=["port"], rules=[
    ("(has(self.virtualServices) && size(self.virtualServices) > 0) || "
     "has(self.virtualServiceSelector)", "set virtualServices or virtualServiceSelector"),
])

# --- status ---------------------------------------------------------------------------------

STATES = ["Accepted", "Warning", "Rejected"]

STATUS = obj({
    "state": string("Accepted: served as written. Warning: served, with the parts named in "
                    "reasons replaced or ignored. Rejected: not served as written.",
                    enum=STATES),
    "servingLastGood": boolean("Rejected, and its last accepted version is what is served."),
    "observedGeneration": integer("The metadata.generation this status is about.",
                                  minimum=0),
    "reasons": array(obj({
        "field": string("Field path in the object, e.g. spec.routes[2].match.regex.",
                        max_length=256),
        "message": string(max_length=1024),
    }, required=["message"]), "Why the state is not Accepted; at most 20 (the last may "
        "say how many more there are).", max_items=20),
    "conditions": {
        **array(obj({
            "type": string(max_length=316),
            "status": string(enum=["True", "False", "Unknown"]),
            "reason": string(max_length=1024),
            "message": string(max_length=32768),
            "observedGeneration": integer(minimum=0),
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        }, required=["type", "status", "lastTransitionTime"]),
            "Kubernetes conditions: Accepted (True for Accepted and Warning, reason "
            "Accepted or AcceptedWithWarnings; False for Rejected, reason Rejected).",
            max_items=8),
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    },
    "writer": obj({
        "replica": string("Replica id of the leader that wrote this status "
                          "(the Lease's holderIdentity).", max_length=MAX_NAME),
        "term": integer("Its term: the Lease's leaseTransitions + 1 while it holds the Lease "
                        "(deploy/status-fencing.yaml refuses any other).", minimum=1),
    }, "Who wrote this status: the fencing token of the write.", required=["replica", "term"]),
}, "Written by the leading holdfast replica.")

KINDS = [
    # kind, plural, short name, spec schema, description, extra printer columns
    ("Gateway", "gateways", "hgw", GATEWAY,
     "A listener on the Envoy proxies and the virtual services it serves.",
     [{"name": "Port", "type": "integer", "jsonPath": ".spec.port"}]),
    ("VirtualService", "virtualservices", "hvs", VIRTUAL_SERVICE,
     "Domains and their ordered routes.", []),
    ("RouteTable", "routetables", "hrt", ROUTE_TABLE,
     "Routes that virtual services (or other tables) delegate to.", []),
    ("Upstream", "upstreams", "hup", UPSTREAM,
     "A set of backend hosts: one Envoy cluster.", []),
    ("RolloutPolicy", "rolloutpolicies", "hrp", ROLLOUT_POLICY,
     "How a new configuration reaches a node group's proxies: canaries first.",
     [{"name": "Node-Group", "type": "string", "jsonPath": ".spec.nodeGroup"}]),
]


def crd(kind, plural, short, spec, description, columns):
    columns = columns + [
        {"name": "Status", "type": "string", "jsonPath": ".status.state",
         "description": "Accepted, Warning or Rejected"},
        {"name": "Serving-Last-Good", "type": "boolean", "priority": 1,
         "jsonPath": ".status.servingLastGood"},
        {"name": "Writer", "type": "string", "priority": 1,
         "jsonPath": ".status.writer.replica"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    schema = obj({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": copy.deepcopy(spec),
        "status": copy.deepcopy(STATUS),
    }, description, required=["spec"])
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}",
                     "labels": {"app.kubernetes.io/part-of": "holdfast"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural,
                      "singular": kind.lower(), "shortNames": [short],
                      "categories": ["holdfast"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Writes shared parts of the description out in full (no YAML anchors)."""

    def ignore_aliases(self, data):
        return True


HEADER = ("# Generated by deploy/gen_crds.py from its description of the decoder\n"
          "# (src/model/decode.cc). Do not edit: change gen_crds.py and run it.\n")


def render() -> dict[str, str]:
    """File name -> contents of every CRD file."""
    out = {}
    for kind, plural, short, spec, description, columns in KINDS:
        text = yaml.dump(crd(kind, plural, short, spec, description, columns),
                         Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
        out[f"{GROUP}_{plural}.yaml"] = HEADER + "---\n" + text
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="fail if deploy/crds/ differs from what is generated")
    parser.add_argument("--not-expressible", action="store_true",
                        help="list the decoder's rules that no schema can check")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.not_expressible:
        print("\n".join(f"- {rule}" for rule in NOT_EXPRESSIBLE))
        return 0
    files = render()
    if args.check:
        stale = [n for n, text in files.items()
                 if not (args.out / n).exists() or (args.out / n).read_text() != text]
        extra = [p.name for p in args.out.glob(f"{GROUP}_*.yaml") if p.name not in files]
        if stale or extra:
            print(f"deploy/crds is stale ({', '.join(stale + extra)}): "
                  "run python3 deploy/gen_crds.py", file=sys.stderr)
            return 1
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    for n, text in files.items():
        (args.out / n).write_text(text)
    for p in args.out.glob(f"{GROUP}_*.yaml"):
        if p.name not in files:
            p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
