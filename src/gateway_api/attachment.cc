#include "src/gateway_api/attachment.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace holdfast::gateway_api {
namespace {

// Whether `host` is covered by the wildcard `pattern` ("*.example.com"
// covers "a.example.com" and "a.b.example.com", not "example.com").
bool Covers(const std::string& pattern, const std::string& host) {
  if (!absl::StartsWith(pattern, "*.")) return false;
  const std::string suffix = pattern.substr(1);  // ".example.com"
  return host.size() > suffix.size() && absl::EndsWith(host, suffix);
}

bool NamespaceAllowed(const Listener& listener, const Gateway& gateway, const std::string& ns,
                      const GatewayApiInput& input) {
  switch (listener.from) {
    case Listener::From::kAll:
      return true;
    case Listener::From::kSame:
      return ns == gateway.meta.ns;
    case Listener::From::kSelector: {
      auto labels = input.namespace_labels.find(ns);
      return labels != input.namespace_labels.end() && listener.selector.Matches(labels->second);
    }
  }
  return false;
}

bool KindAllowed(const ListenerStatus& status, const Route& route) {
  for (const GroupKind& kind : status.supported_kinds) {
    if (kind.group == kGroup && kind.kind == route.short_kind()) return true;
  }
  return false;
}

bool Selects(const ParentRef& parent, const Listener& listener) {
  return (parent.section_name.empty() || parent.section_name == listener.name) &&
         (parent.port == 0 || parent.port == listener.port);
}

Condition NotAccepted(std::string reason, std::string message) {
  return {"Accepted", false, std::move(reason), std::move(message)};
}

ParentAttachment Attach(const Route& route, const ParentRef& parent, const Gateway& gateway,
                        const std::vector<ServedListener>& served, const GatewayApiInput& input) {
  ParentAttachment out{&parent, {"Accepted", true, "Accepted", "route accepted"}, {}};
  int selected = 0, allowed = 0;
  for (const Listener& listener : gateway.listeners) selected += Selects(parent, listener);
  for (const ServedListener& s : served) {
    if (s.gateway != &gateway || !Selects(parent, *s.listener)) continue;
    if (!KindAllowed(*s.status, route) ||
        !NamespaceAllowed(*s.listener, gateway, route.meta.ns, input)) {
      continue;
    }
    ++allowed;
    std::vector<std::string> hosts = IntersectHostnames(s.listener->hostname, route.hostnames);
    if (!hosts.empty()) out.attachments.push_back({&s, std::move(hosts)});
  }
  if (selected == 0) {
    out.accepted = NotAccepted("NoMatchingParent",
                               parent.section_name.empty() && parent.port == 0
                                   ? "the Gateway has no listener"
                                   : "no listener of the Gateway matches sectionName/port");
  } else if (allowed == 0) {
    out.accepted = NotAccepted("NotAllowedByListeners",
                               absl::StrCat("no served listener admits ", route.short_kind(),
                                            "s from namespace ", route.meta.ns));
  } else if (out.attachments.empty()) {
    out.accepted =
        NotAccepted("NoMatchingListenerHostname", "no hostname in common with the listeners");
  }
  return out;
}

}  // namespace

std::vector<std::string> IntersectHostnames(const std::string& listener,
                                            const std::vector<std::string>& route) {
  if (route.empty()) return {listener.empty() ? "*" : listener};
  if (listener.empty()) return route;
  std::vector<std::string> out;
  for (const std::string& host : route) {
    if (host == listener || Covers(listener, host)) {
      out.push_back(host);
    } else if (Covers(host, listener)) {
      out.push_back(listener);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<ParentAttachment> AttachRoute(const Route& route,
                                          const std::vector<const Gateway*>& gateways,
                                          const std::vector<ServedListener>& served,
                                          const GatewayApiInput& input) {
  std::vector<ParentAttachment> out;
  for (const ParentRef& parent : route.parents) {
    if (parent.group != kGroup || parent.kind != "Gateway") continue;
    const std::string ns = parent.ns.empty() ? route.meta.ns : parent.ns;
    auto gateway = std::find_if(gateways.begin(), gateways.end(), [&](const Gateway* g) {
      return g->meta.ns == ns && g->meta.name == parent.name;
    });
    if (gateway == gateways.end()) continue;
    out.push_back(Attach(route, parent, **gateway, served, input));
  }
  return out;
}

}  // namespace holdfast::gateway_api
