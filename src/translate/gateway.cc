#include "src/translate/gateway.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "envoy/config/listener/v3/listener.pb.h"
#include "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.pb.h"
#include "envoy/extensions/transport_sockets/tls/v3/tls.pb.h"
#include "src/common/protowire.h"
#include "src/translate/envoy_validation.h"
#include "src/translate/hcm.h"
#include "src/translate/names.h"

namespace holdfast {
namespace {

using envoy::config::listener::v3::Listener;

// The services a gateway selects that are served, in key order, with their
// outputs.
ServedServices SelectedServices(const GatewayObject& gateway, const GatewayContext& context,
                                ObjectStatus& status) {
  const auto& spec = std::get<GatewaySpec>(*gateway.spec);
  const ObjectIndex& index = *context.index;
  // Positions in the index are in key order: sorting them is sorting the
  // services, without comparing keys (a tenth of a change of one of 10,000
  // HTTPRoutes, whose Gateway lists every host's service by name).
  std::vector<size_t> listed;
  size_t hint = 0;
  for (size_t i = 0; i < spec.virtual_services.size(); ++i) {
    const size_t at =
        index.PositionOf(kind::kVirtualService, spec.virtual_services[i], gateway.meta.ns, hint);
    if (at == ObjectIndex::kNone) {
      status.Warn(absl::StrCat("spec.virtualServices[", i, "]"),
                  absl::StrCat("virtual service ", spec.virtual_services[i].name, " not found"));
      continue;
    }
    listed.push_back(at);
    hint = at + 1;
  }
  if (!std::is_sorted(listed.begin(), listed.end())) std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  std::vector<const GatewayObject*> selected;
  for (size_t at : listed) selected.push_back(index.All()[at]);
  if (spec.virtual_service_selector) {  // a selection alone is already in key order
    std::vector<const GatewayObject*> chosen =
        index.Select(kind::kVirtualService, *spec.virtual_service_selector, gateway.meta.ns);
    if (selected.empty()) {
      selected = std::move(chosen);
    } else {
      std::vector<const GatewayObject*> both;
      std::set_union(selected.begin(), selected.end(), chosen.begin(), chosen.end(),
                     std::back_inserter(both),
                     [](const auto* a, const auto* b) { return KeyLess(*a, *b); });
      selected = std::move(both);
    }
  }
  // Services that could not be translated are Rejected on their own.
  ServedServices servable;
  auto cursor = context.services->cbegin();
  for (const GatewayObject* vs : selected) {
    if (const ServiceOutput* out = FindServed(*context.services, cursor, *vs)) {
      servable.emplace_back(vs, out);
    }
  }
  if (servable.empty()) status.Warn("spec", "selects no virtual service; every request gets 404");
  return servable;
}

// A RouteConfiguration of `name` with the services' encoded virtual hosts,
// in order.
std::string RouteConfigurationBytes(const std::string& name,
                                    const std::vector<const ServiceOutput*>& served) {
  std::string bytes;
  // Sized once: growing a string of megabytes copies it again at each doubling.
  size_t size = LengthDelimitedSize(1, name.size());
  for (const ServiceOutput* service : served) {
    size += LengthDelimitedSize(2, service->gateway_vhost.size());
  }
  bytes.reserve(size);
  AppendLengthDelimited(1, name, &bytes);  // RouteConfiguration.name
  for (const ServiceOutput* service : served) {
    AppendLengthDelimited(2, service->gateway_vhost, &bytes);  // .virtual_hosts
  }
  return bytes;
}

// Claims the service's domains unless one of them is taken, in which case
// the service is Rejected on this gateway. Returns whether claimed.
bool ClaimDomains(const GatewayObject& gateway, const GatewayObject& vs, GatewayOutput* out) {
  const std::vector<std::string>& domains = std::get<VirtualServiceSpec>(*vs.spec).domains;
  std::vector<std::string> conflicts;
  for (const std::string& domain : domains) {
    auto [owner, fresh] = out->owners.by_domain->emplace(domain, vs.key());
    if (!fresh) {
      conflicts.push_back(absl::StrCat(domain, " (served by ", owner->second.ToString(), ")"));
    }
  }
  if (!conflicts.empty()) {
    ObjectStatus& status = out->statuses[vs.key()];
    status.key = vs.key();
    status.Reject("spec.domains", absl::StrCat("conflicts on ", gateway.key().ToString(), ": ",
                                               absl::StrJoin(conflicts, ", "),
                                               "; not served by that gateway"));
    // Release the domains this service claimed before the conflict.
    for (const std::string& domain : domains) {
      auto claimed = out->owners.by_domain->find(domain);
      if (claimed != out->owners.by_domain->end() && IsKeyOf(claimed->second, vs)) {
        out->owners.by_domain->erase(claimed);
      }
    }
    return false;
  }
  return true;
}

// Which of `selected` (in key order) the gateway serves, as indexes in key
// order. When two share a domain, services that served a domain here
// before claim first, so that a newcomer never takes a domain away; the
// virtual hosts are still written in key order, as a translation without
// that history writes them.
std::vector<size_t> ServedAfterClaims(const GatewayObject& gateway,
                                      const ServedServices& selected,
                                      const GatewayContext& context, GatewayOutput* out) {
  auto domains_of = [](const auto& entry, auto add) {
    for (const std::string& domain : std::get<VirtualServiceSpec>(*entry.first->spec).domains) {
      add(domain, *entry.first);
    }
  };
  auto claim_hash = [](const auto& entry) { return entry.second->gateway_claims; };
  std::vector<size_t> in_order;
  const std::string gateway_id = gateway.key().ToString();
  auto previous = context.previous_owners->find(gateway_id);
  const ScopeOwners* reusable =
      previous == context.previous_owners->end() ? nullptr : &previous->second;
  if (ClaimAllIfDisjoint(selected, domains_of, claim_hash, reusable, out->owners)) {
    for (size_t i = 0; i < selected.size(); ++i) in_order.push_back(i);
    return in_order;
  }
  std::vector<bool> incumbent(selected.size()), served(selected.size());
  for (size_t i = 0; i < selected.size(); ++i) {
    incumbent[i] = ServedBefore(*context.previous_owners, gateway_id, *selected[i].first);
  }
  for (bool incumbents : {true, false}) {
    for (size_t i = 0; i < selected.size(); ++i) {
      if (incumbent[i] == incumbents) served[i] = ClaimDomains(gateway, *selected[i].first, out);
    }
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    if (served[i]) in_order.push_back(i);
  }
  return in_order;
}

// Points `chain` at TLS with `certificate`; `field` is where the
// certificate is in the Gateway, for errors.
std::optional<FieldError> AddTls(const GatewayObject& gateway,
                                 const GatewayCertificate& certificate, const std::string& field,
                                 const ObjectIndex& index,
                                 envoy::config::listener::v3::FilterChain* chain) {
  envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext tls;
  auto* out = tls.mutable_common_tls_context()->add_tls_certificates();
  if (!certificate.secret.name.empty()) {
    const GatewayObject* secret = index.Find(kind::kSecret, certificate.secret, gateway.meta.ns);
    if (secret == nullptr) {
      return FieldError{absl::StrCat(field, ".secretRef"),
                        absl::StrCat("secret ", certificate.secret.name, " not found"),
                        {}};
    }
    const auto& material = std::get<SecretSpec>(*secret->spec);
    out->mutable_certificate_chain()->set_inline_string(material.certificate);
    out->mutable_private_key()->set_inline_string(material.private_key);
  } else {
    out->mutable_certificate_chain()->set_filename(certificate.cert_file);
    out->mutable_private_key()->set_filename(certificate.key_file);
  }
  chain->mutable_transport_socket()->set_name("envoy.transport_sockets.tls");
  chain->mutable_transport_socket()->mutable_typed_config()->PackFrom(tls);
  return std::nullopt;
}

// The listener's filter chains: one without TLS, or one per certificate,
// chosen by the server name (SNI) the client sends; the default
// certificate's chain takes clients whose name no other chain lists.
std::optional<FieldError> AddFilterChains(const GatewayObject& gateway, const ObjectIndex& index,
                                          const envoy::config::listener::v3::Filter& hcm,
                                          Listener* listener) {
  const auto& spec = std::get<GatewaySpec>(*gateway.spec);
  if (!spec.tls) {
    *listener->add_filter_chains()->add_filters() = hcm;
    return std::nullopt;
  }
  for (size_t i = 0; i < spec.tls->sni.size(); ++i) {
    const SniCertificate& sni = spec.tls->sni[i];
    auto* chain = listener->add_filter_chains();
    *chain->add_filters() = hcm;
    for (const std::string& name : sni.server_names) {
      chain->mutable_filter_chain_match()->add_server_names(name);
    }
    const std::string field = absl::StrCat("spec.tls.certificates[", i, "]");
    if (auto error = AddTls(gateway, sni.certificate, field, index, chain)) return error;
  }
  if (!spec.tls->certificate.empty()) {
    auto* chain = listener->add_filter_chains();
    *chain->add_filters() = hcm;
    if (auto error = AddTls(gateway, spec.tls->certificate, "spec.tls", index, chain)) return error;
  }
  if (!spec.tls->sni.empty()) {
    // Reads the server name before a chain is chosen.
    auto* inspector = listener->add_listener_filters();
    inspector->set_name("envoy.filters.listener.tls_inspector");
    inspector->mutable_typed_config()->PackFrom(
        envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector());
  }
  return std::nullopt;
}

}  // namespace

bool ServedBefore(const DomainOwners& owners, absl::string_view scope, const GatewayObject& vs) {
  auto in_scope = owners.find(scope);
  if (in_scope == owners.end()) return false;
  for (const std::string& domain : std::get<VirtualServiceSpec>(*vs.spec).domains) {
    auto it = in_scope->second.by_domain->find(domain);
    if (it != in_scope->second.by_domain->end() && IsKeyOf(it->second, vs)) return true;
  }
  return false;
}

std::optional<FieldError> TranslateGateway(const GatewayObject& gateway,
                                           const GatewayContext& context, GatewayOutput* out) {
  const auto& spec = std::get<GatewaySpec>(*gateway.spec);
  ObjectStatus& own_status = out->statuses[gateway.key()];
  own_status.key = gateway.key();
  const std::string routes_name = names::GatewayRoutes(gateway.key());
  std::string host_digests;  // in the order of their hosts
  bool cors = false;
  const ServedServices selected = SelectedServices(gateway, context, own_status);
  std::vector<const ServiceOutput*> served;
  for (size_t i : ServedAfterClaims(gateway, selected, context, out)) {
    served.push_back(selected[i].second);
  }
  host_digests.reserve(served.size() * 16);
  for (const ServiceOutput* service : served) {
    host_digests += service->gateway_vhost_digest;
    cors |= service->cors;
  }

  Listener listener;
  listener.set_name(names::GatewayListener(gateway.key()));
  auto* socket = listener.mutable_address()->mutable_socket_address();
  socket->set_address(spec.bind_address);
  socket->set_port_value(spec.port);
  envoy::config::listener::v3::Filter hcm;
  hcm.set_name("envoy.filters.network.http_connection_manager");
  hcm.mutable_typed_config()->PackFrom(MakeHcm(StatPrefix(listener.name()), routes_name, cors));
  if (auto error = AddFilterChains(gateway, *context.index, hcm, &listener)) return error;
  if (absl::Status valid = ValidateEnvoyResource(listener); !valid.ok()) {
    return FieldError{
        "spec", absl::StrCat("Envoy would refuse its listener: ", valid.message()), {}};
  }
  // Versioned by its hosts' digests, each made once per change of its
  // service, not by a digest of all its bytes (about 9 ms for 15 MB). The
  // bytes are the name and the hosts in this order, so equal content still
  // means an equal version on every replica; snapshot files store it.
  const std::string type(type_url::kRouteConfiguration);
  std::string version = ContentDigest({type, "\n", routes_name, "\n", host_digests});
  auto before = context.made_before->find(EqualResourceKey(type, routes_name));
  if (before != context.made_before->end() && before->second->version() == version) {
    out->resources.push_back(before->second);
  } else {
    out->resources.push_back(Resource::FromBytes(
        routes_name, type, RouteConfigurationBytes(routes_name, served), std::move(version)));
  }
  out->resources.push_back(
      SameAsBefore(*context.made_before, Resource::FromMessage(listener.name(), listener)));
  return std::nullopt;
}

std::string EqualResourceKey(absl::string_view type_url, absl::string_view name) {
  return absl::StrCat(type_url, "\n", name);
}

ResourcePtr SameAsBefore(const ResourcesMadeBefore& before, ResourcePtr resource) {
  auto found = before.find(EqualResourceKey(resource->type_url(), resource->name()));
  return found != before.end() && SameContent(*found->second, *resource) ? found->second : resource;
}

}  // namespace holdfast
