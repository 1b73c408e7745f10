#include "src/gateway_api/listeners.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "src/gateway_api/reference_grants.h"

namespace holdfast::gateway_api {
namespace {

bool Supported(const GroupKind& kind) {
  return kind.group == kGroup && (kind.kind == "HTTPRoute" || kind.kind == "GRPCRoute");
}

void Refuse(ListenerStatus& status, std::string type, std::string reason, std::string message) {
  const bool conflicted = type == "Conflicted";
  SetCondition(status.conditions, {type, conflicted, reason, message});
  SetCondition(status.conditions, {"Programmed", false, "Invalid", std::move(message)});
}

ListenerStatus InitialStatus(const Listener& listener) {
  ListenerStatus status;
  status.name = listener.name;
  status.conditions = {{"Accepted", true, "Accepted", "listener accepted"},
                       {"Conflicted", false, "NoConflicts", "no conflict"},
                       {"ResolvedRefs", true, "ResolvedRefs", "references resolved"},
                       {"Programmed", true, "Programmed", "served by holdfast"}};
  if (listener.protocol != "HTTP" && listener.protocol != "HTTPS") {
    Refuse(status, "Accepted", "UnsupportedProtocol",
           absl::StrCat("protocol ", listener.protocol, " is not supported (HTTP, HTTPS)"));
    return status;
  }
  if (listener.port == 0) {  // missing or invalid: spec.listeners[i].port says why
    Refuse(status, "Accepted", "PortUnavailable", "no valid port");
    return status;
  }
  if (listener.kinds.empty()) {
    status.supported_kinds = {{kGroup, "HTTPRoute"}, {kGroup, "GRPCRoute"}};
  }
  for (const GroupKind& kind : listener.kinds) {
    if (Supported(kind)) {
      status.supported_kinds.push_back(kind);
    } else {
      SetCondition(status.conditions,
                   {"ResolvedRefs", false, "InvalidRouteKinds",
                    absl::StrCat("route kind ", kind.group, "/", kind.kind, " is not supported")});
    }
  }
  if (status.supported_kinds.empty()) {
    SetCondition(status.conditions, {"Programmed", false, "Invalid", "no supported route kind"});
  }
  return status;
}

// The Secret an HTTPS listener terminates with, or why there is none.
void ResolveCertificate(const Gateway& gateway, const Listener& listener,
                        const GatewayApiInput& input, ListenerStatus& status,
                        ServedListener* served) {
  if (listener.tls_mode != "Terminate") {
    Refuse(status, "Accepted", "UnsupportedValue", "only TLS mode Terminate is supported");
    return;
  }
  if (listener.certificate_refs.empty()) {
    Refuse(status, "ResolvedRefs", "InvalidCertificateRef", "HTTPS needs a certificateRef");
    return;
  }
  // holdfast terminates with one certificate per listener: the first.
  const SecretRef& ref = listener.certificate_refs.front();
  const std::string ns = ref.ns.empty() ? gateway.meta.ns : ref.ns;
  if (!ref.group.empty() || ref.kind != "Secret") {
    Refuse(status, "ResolvedRefs", "InvalidCertificateRef",
           absl::StrCat("certificateRef kind ", ref.group, "/", ref.kind, " is not a Secret"));
  } else if (!ReferenceGrants(input.grants)
                  .Permits({kGroup, "Gateway", gateway.meta.ns}, {"", "Secret", ns, ref.name})) {
    Refuse(status, "ResolvedRefs", "RefNotPermitted",
           absl::StrCat("no ReferenceGrant in ", ns, " allows Secret ", ref.name));
  } else if (!input.secrets.contains(ServiceKey{ns, ref.name})) {
    Refuse(status, "ResolvedRefs", "InvalidCertificateRef",
           absl::StrCat("Secret ", ns, "/", ref.name, " of type kubernetes.io/tls not found"));
  } else {
    served->certificate = &ref;
    served->certificate_ns = ns;
  }
}

// Listeners of one Gateway on one port must agree on the protocol and
// differ in hostname (HTTPS listeners: which certificate a client gets
// follows the server name it sends, SNI).
void MarkConflicts(const Gateway& gateway, std::vector<ServedListener>& candidates) {
  std::map<uint32_t, std::vector<ServedListener*>> by_port;
  for (ServedListener& c : candidates) by_port[c.listener->port].push_back(&c);
  for (auto& [port, group] : by_port) {
    bool protocols_differ = false;
    for (ServedListener* c : group) {
      protocols_differ |= c->listener->protocol != group.front()->listener->protocol;
    }
    for (size_t i = 0; i < group.size(); ++i) {
      ListenerStatus& status = *group[i]->status;
      if (protocols_differ) {
        Refuse(status, "Conflicted", "ProtocolConflict",
               absl::StrCat("listeners on port ", port, " use different protocols"));
        continue;
      }
      for (size_t j = 0; j < i; ++j) {
        if (group[j]->listener->hostname == group[i]->listener->hostname) {
          Refuse(status, "Conflicted", "HostnameConflict",
                 absl::StrCat("listener ", group[j]->listener->name, " has the same hostname"));
          break;
        }
      }
    }
  }
}

bool Served(const ListenerStatus& status) {
  const Condition* programmed = FindCondition(status.conditions, "Programmed");
  return programmed != nullptr && programmed->status;
}

void SetGatewayConditions(const Gateway& gateway, GatewayApiStatus& status) {
  int served = 0;
  for (const ListenerStatus& listener : status.listeners) served += Served(listener);
  const int total = static_cast<int>(status.listeners.size());
  if (gateway.has_addresses) {
    status.conditions.push_back({"Accepted", false, "UnsupportedAddress",
                                 "holdfast does not assign addresses: remove spec.addresses"});
  } else if (served == total) {
    status.conditions.push_back({"Accepted", true, "Accepted", "gateway accepted"});
  } else {
    status.conditions.push_back(
        {"Accepted", served > 0, "ListenersNotValid",
         absl::StrCat(total - served, " of ", total, " listeners are not valid")});
  }
}

}  // namespace

std::vector<ServedListener> PlanListeners(const std::vector<const Gateway*>& gateways,
                                          const GatewayApiInput& input,
                                          GatewayApiStatuses* statuses) {
  std::vector<ServedListener> served;
  std::map<uint32_t, ObjectKey> port_owner;  // ports held by older Gateways
  for (const Gateway* gateway : gateways) {
    const ObjectKey key{kGatewayKind, gateway->meta.ns, gateway->meta.name};
    GatewayApiStatus& status = statuses->Mutable(key);
    status.generation = gateway->meta.generation;
    status.problems = gateway->errors.errors();
    for (const Listener& listener : gateway->listeners) {
      status.listeners.push_back(InitialStatus(listener));
    }
    std::vector<ServedListener> candidates;
    for (size_t i = 0; i < gateway->listeners.size(); ++i) {
      const Listener& listener = gateway->listeners[i];
      ServedListener candidate{gateway, &listener, &status.listeners[i], nullptr, ""};
      if (listener.protocol == "HTTPS") {
        ResolveCertificate(*gateway, listener, input, status.listeners[i], &candidate);
      }
      auto [owner, fresh] = port_owner.emplace(listener.port, key);
      if (!fresh && owner->second != key) {
        Refuse(status.listeners[i], "Accepted", "PortUnavailable",
               absl::StrCat("port ", listener.port, " is used by ", owner->second.ToString()));
      }
      candidates.push_back(candidate);
    }
    MarkConflicts(*gateway, candidates);
    for (ServedListener& candidate : candidates) {
      if (gateway->has_addresses) {
        SetCondition(candidate.status->conditions,
                     {"Programmed", false, "Invalid", "the Gateway is not accepted"});
      }
      if (Served(*candidate.status)) served.push_back(candidate);
    }
    SetGatewayConditions(*gateway, status);
  }
  return served;
}

}  // namespace holdfast::gateway_api
