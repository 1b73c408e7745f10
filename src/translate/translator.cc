#include "src/translate/translator.h"

#include <algorithm>
#include <compare>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "envoy/config/cluster/v3/cluster.pb.h"
#include "envoy/config/endpoint/v3/endpoint.pb.h"
#include "src/common/parallel_for.h"
#include "src/translate/cluster.h"
#include "src/translate/envoy_validation.h"
#include "src/translate/rollout_policies.h"
#include "src/translate/route.h"
#include "src/translate/service_assignment.h"

namespace holdfast {

struct Translator::Pass {
  Pass(const DiscoveredServices& services, StatusMap& statuses, std::vector<ResourcePtr>& resources)
      : services(services), statuses(statuses), resources(resources) {}
  const DiscoveredServices& services;
  StatusMap& statuses;
  std::vector<ResourcePtr>& resources;
  // The objects in effect: valid ones, and the last accepted version of
  // invalid ones; indexed once upstreams have been settled.
  SortedObjects effective;
  ObjectIndex index;
  std::string route_tables_epoch;  // RouteTablesEpoch of the index
  // UpstreamRefHash of the upstreams added to or gone from the index since
  // the last translation, sorted: services that name one translate again.
  std::vector<size_t> upstreams_changed;
  DomainOwners next_owners;
  ServedServices served;  // by TranslateServices
  // The input objects new or changed since last accepted, with their
  // statuses (map nodes: they stay where they are as others are added).
  std::vector<std::pair<const GatewayObject*, const ObjectStatus*>> to_remember;
  ResourcesMadeBefore made;  // the next made_before_
};

namespace {

// The empty cluster gRPC routes without a destination point at.
std::vector<ResourcePtr> UnroutableCluster() {
  envoy::config::cluster::v3::Cluster cluster;
  cluster.set_name(kUnroutableCluster);
  cluster.set_type(envoy::config::cluster::v3::Cluster::EDS);
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->mutable_ads();
  cluster.mutable_eds_cluster_config()->mutable_eds_config()->set_resource_api_version(
      envoy::config::core::v3::V3);
  cluster.mutable_connect_timeout()->set_seconds(1);
  envoy::config::endpoint::v3::ClusterLoadAssignment empty;
  empty.set_cluster_name(kUnroutableCluster);
  return {Resource::FromMessage(kUnroutableCluster, cluster),
          Resource::FromMessage(kUnroutableCluster, empty)};
}

// The Service `upstream` names, as discovered; nullptr if none.
const DiscoveredService* NamedService(const GatewayObject& upstream,
                                      const DiscoveredServices& services) {
  // Without Kubernetes there are none: a change then spares building a key
  // for each of thousands of upstreams.
  if (services.empty()) return nullptr;
  std::optional<ServiceKey> key = ServiceKeyOf(upstream);
  if (!key.has_value()) return nullptr;
  auto found = services.find(*key);
  return found == services.end() ? nullptr : &found->second;
}

// Whether `service` is what `known` says the Service was.
bool SameService(const std::optional<DiscoveredService>& known, const DiscoveredService* service) {
  return service == nullptr ? !known.has_value() : known.has_value() && *known == *service;
}

// UpstreamRefHash of the upstreams that entered or left `index` since
// `known` (the upstreams of the last index, in key order), sorted; `known`
// becomes this index's upstreams.
std::vector<size_t> UpstreamsChanged(const ObjectIndex& index, std::vector<ObjectKey>& known) {
  auto [begin, end] = RangeOfKind(index.All(), kind::kUpstream);
  if (std::equal(begin, end, known.begin(), known.end(),
                 [](const GatewayObject* object, const ObjectKey& key) {
                   return IsKeyOf(key, *object);
                 })) {
    return {};  // the usual case: a change that adds or removes no upstream
  }
  std::vector<ObjectKey> now;
  for (auto it = begin; it != end; ++it) now.push_back((*it)->key());
  std::vector<ObjectKey> changed;
  std::set_symmetric_difference(known.begin(), known.end(), now.begin(), now.end(),
                                std::back_inserter(changed));
  known = std::move(now);
  std::vector<size_t> hashes;
  for (const ObjectKey& key : changed) hashes.push_back(UpstreamRefHash(key.ns, key.name));
  std::sort(hashes.begin(), hashes.end());
  return hashes;
}

// Fills `owners` with who serves each domain to gRPC clients. On a conflict,
// services that served it before claim first (ServedBefore), as on a
// gateway, which reorders `services` so. Returns whether none conflicted.
bool ClaimGrpcDomains(const DomainOwners& previous, ServedServices& services, ScopeOwners& owners) {
  auto domains_of = [](const auto& entry, auto add) {
    for (const auto& [domain, listener] : entry.second->grpc_listeners) add(domain, *entry.first);
  };
  auto scope = previous.find("");
  const ScopeOwners* reusable = scope == previous.end() ? nullptr : &scope->second;
  auto claim_hash = [](const auto& entry) { return entry.second->grpc_claims; };
  if (ClaimAllIfDisjoint(services, domains_of, claim_hash, reusable, owners)) return true;
  std::stable_partition(services.begin(), services.end(), [&](const auto& entry) {
    return ServedBefore(previous, "", *entry.first);
  });
  for (const auto& entry : services) {
    domains_of(entry, [&](const std::string& domain, const GatewayObject& vs) {
      owners.by_domain->emplace(domain, vs.key());
    });
  }
  return false;
}

// Stores `value` for `object` in `cache`, at `at` (its entry there, or the
// cache's end if it has none); returns where it is.
template <typename Cache, typename Value>
typename Cache::iterator StoreAt(Cache& cache, typename Cache::iterator at,
                                 const GatewayObject& object, Value&& value) {
  if (at == cache.end()) return cache.emplace(object.key(), std::forward<Value>(value)).first;
  at->second = std::forward<Value>(value);
  return at;
}

// Erases every entry of `cache` but the `kept` ones (distinct, in key order).
template <typename Cache>
void EraseAllBut(Cache& cache, const std::vector<typename Cache::iterator>& kept) {
  if (kept.size() == cache.size()) return;  // the usual case: every one kept
  auto next_kept = kept.begin();
  for (auto it = cache.begin(); it != cache.end();) {
    if (next_kept != kept.end() && it == *next_kept) {
      ++next_kept;
      ++it;
    } else {
      it = cache.erase(it);
    }
  }
}

// `made` is `old` if both have the same type, name and version: an object
// translated again mostly makes some of the same resources, which the
// snapshot then finds unchanged by their pointers.
void KeepIfEqual(const ResourcePtr& old, ResourcePtr& made) {
  if (old != nullptr && made != nullptr && SameContent(*old, *made)) made = old;
}

// KeepIfEqual for a service's gRPC resources, from its translation before.
void KeepEqualResources(const ServiceOutput& before, ServiceOutput& now) {
  KeepIfEqual(before.grpc_routes, now.grpc_routes);
  for (auto& [domain, listener] : now.grpc_listeners) {
    auto old = before.grpc_listeners.find(domain);
    if (old != before.grpc_listeners.end()) KeepIfEqual(old->second, listener);
  }
}

// Reports the warnings a service's translation gave, on whichever objects.
void ReplayWarnings(const ServiceOutput& service, StatusMap& statuses) {
  for (const auto& [key, warning] : service.warnings) {
    statuses[key].key = key;
    statuses[key].Warn(warning.path, warning.message, warning.location);
  }
}

}  // namespace

TranslationOutput Translator::Translate(const TranslationInput& input) {
  TranslationOutput output;
  output.resources.reserve(resources_before_);  // mostly as many as last time
  Pass pass(input.services, output.statuses, output.resources);
  CollectEffective(input, pass);
  TranslateUpstreams(pass);
  pass.index = ObjectIndex(pass.effective);
  pass.route_tables_epoch = RouteTablesEpoch(pass.index);
  pass.upstreams_changed = UpstreamsChanged(pass.index, upstreams_indexed_);
  TranslateServices(pass);
  TranslateGateways(pass);
  if (options_.grpc_listeners) AddGrpcListeners(pass);
  output.rollouts = CollectRolloutPolicies(pass.effective, output.statuses);
  domain_owners_ = std::move(pass.next_owners);
  made_before_ = std::move(pass.made);
  RememberAccepted(pass.to_remember);
  resources_before_ = output.resources.size();
  return output;
}

void Translator::CollectEffective(const TranslationInput& input, Pass& pass) {
  StartInput(input, pass);
  for (const auto& [key, errors] : input.invalid) {
    ObjectStatus& status = pass.statuses[key];
    status.key = key;
    for (const FieldError& e : errors) status.Reject(e.path, e.message, e.location);
    if (!errors.empty()) status.location = errors.front().location;
    auto last = last_accepted_.find(key);
    if (last != last_accepted_.end()) {
      InsertOrAssign(pass.effective, &last->second);
      status.serving_last_good = true;
    }
  }
}

// One walk over the input, the statuses recycled and what was last
// accepted, all in key order and mostly with the same keys as last time.
void Translator::StartInput(const TranslationInput& input, Pass& pass) {
  StatusMap& statuses = pass.statuses;
  statuses = std::move(spare_statuses_);
  spare_statuses_.clear();
  auto status = statuses.begin();
  auto last = last_accepted_.begin();
  pass.effective.reserve(input.objects.size());
  for (const auto& [key, object] : input.objects) {
    pass.effective.push_back(&object);  // in key order: appended at the end
    status = StatusAt(statuses, status, key);
    if (status->second.location != object.meta.location) {  // mostly the same: not copied
      status->second.location = object.meta.location;
    }
    last = ForgetGoneBefore(last, &key, input.invalid);
    const bool known = last != last_accepted_.end() && last->first == key;
    if (!known || last->second.content_digest != object.content_digest) {
      pass.to_remember.emplace_back(&object, &status->second);
    }
    if (known) ++last;
    ++status;
  }
  statuses.erase(status, statuses.end());
  ForgetGoneBefore(last, nullptr, input.invalid);
}

StatusMap::iterator Translator::StatusAt(StatusMap& statuses, StatusMap::iterator at,
                                         const ObjectKey& key) {
  auto order = std::strong_ordering::greater;
  while (at != statuses.end() && (order = at->first <=> key) < 0) at = statuses.erase(at);
  if (at == statuses.end() || order != 0) {
    return statuses.emplace_hint(at, key, ObjectStatus{.key = key});
  }
  ObjectStatus& status = at->second;
  // Most are Accepted as they were: nothing to reset, nothing written.
  status.state = StatusState::kAccepted;
  status.reasons.clear();  // its buffer is kept
  status.serving_last_good = false;
  if (status.key != key) status.key = key;  // an entry not made from an input object
  return at;
}

Translator::LastAccepted::iterator Translator::ForgetGoneBefore(
    LastAccepted::iterator at, const ObjectKey* key,
    const std::map<ObjectKey, std::vector<FieldError>>& invalid) {
  while (at != last_accepted_.end() && (key == nullptr || at->first < *key)) {
    at = invalid.contains(at->first) ? std::next(at) : last_accepted_.erase(at);
  }
  return at;
}

const GatewayObject* Translator::LastGood(const GatewayObject& object) const {
  auto last = last_accepted_.find(object.key());
  if (last == last_accepted_.end() || last->second.content_digest == object.content_digest) {
    return nullptr;
  }
  return &last->second;
}

Translator::UpstreamOutput Translator::UpstreamFor(const GatewayObject& upstream,
                                                   UpstreamCache::iterator cached,
                                                   const DiscoveredServices& services) {
  const DiscoveredService* service = NamedService(upstream, services);
  if (cached != upstream_cache_.end() && StillCurrent(cached->second, upstream, service)) {
    return std::move(cached->second);  // the cache is rebuilt from what this pass returns
  }
  UpstreamOutput out;
  ObjectStatus scratch;
  scratch.location = upstream.meta.location;
  out.digest = upstream.content_digest;
  if (service != nullptr) out.service = *service;
  out.resources = TranslateUpstream(upstream, &scratch, services);
  if (cached != upstream_cache_.end()) {  // its cluster, when only endpoints changed
    const std::vector<ResourcePtr>& before = cached->second.resources;
    for (size_t i = 0; i < std::min(before.size(), out.resources.size()); ++i) {
      KeepIfEqual(before[i], out.resources[i]);
    }
  }
  out.warnings = scratch.reasons;
  for (const ResourcePtr& resource : out.resources) {
    if (absl::Status valid = ValidateEnvoyResource(*resource->message()); !valid.ok()) {
      out.error = FieldError{"spec",
                             absl::StrCat("Envoy would refuse its ",
                                          TypeNameOf(resource->type_url()), ": ", valid.message()),
                             {}};
    }
  }
  return out;
}

bool Translator::StillCurrent(const UpstreamOutput& cached, const GatewayObject& upstream,
                              const DiscoveredService* service) {
  return cached.digest == upstream.content_digest && SameService(cached.service, service);
}

void Translator::Serve(const UpstreamOutput& upstream, ObjectStatus& status, Pass& pass) {
  for (const FieldError& w : upstream.warnings) status.Warn(w.path, w.message, w.location);
  pass.resources.insert(pass.resources.end(), upstream.resources.begin(), upstream.resources.end());
}

// Upstreams: clusters and load assignments, reused when unchanged. One that
// Envoy would refuse is served at its last accepted version, or not at all
// (routes to it then answer like routes to a missing upstream).
void Translator::TranslateUpstreams(Pass& pass) {
  std::vector<UpstreamCache::iterator> kept;
  auto cursor = upstream_cache_.begin();
  auto status_cursor = pass.statuses.begin();
  auto [begin, end] = RangeOfKind(pass.effective, kind::kUpstream);
  std::vector<bool> refused(end - begin);  // served at no version: out of the index
  for (auto it = begin; it != end; ++it) {
    const GatewayObject& upstream = **it;
    auto found = SeekKeyOf(pass.statuses, status_cursor, upstream);  // CollectEffective made it
    ObjectStatus& status =
        found != pass.statuses.end() ? found->second : pass.statuses[upstream.key()];
    auto cached = SeekKeyOf(upstream_cache_, cursor, upstream);
    if (cached != upstream_cache_.end() &&
        StillCurrent(cached->second, upstream, NamedService(upstream, pass.services))) {
      Serve(cached->second, status, pass);  // the usual case: used where it is
      kept.push_back(cached);
      continue;
    }
    UpstreamOutput out = UpstreamFor(upstream, cached, pass.services);
    if (out.error) {
      status.Reject(out.error->path, out.error->message);
      const GatewayObject* last = LastGood(upstream);
      if (last != nullptr) out = UpstreamFor(*last, cached, pass.services);
      if (last == nullptr || out.error) {
        refused[it - begin] = true;
        continue;
      }
      *it = last;
      status.serving_last_good = true;
    }
    Serve(out, status, pass);
    kept.push_back(StoreAt(upstream_cache_, cached, upstream, std::move(out)));
  }
  EraseAllBut(upstream_cache_, kept);
  auto served_end = begin;
  for (auto it = begin; it != end; ++it) {
    if (!refused[it - begin]) *served_end++ = *it;
  }
  pass.effective.erase(served_end, end);
}

absl::StatusOr<ServiceOutput> Translator::ServiceFor(const GatewayObject& vs,
                                                     ServiceOutputs::iterator cached,
                                                     const Pass& pass) {
  if (cached != service_cache_.end() && StillCurrent(cached->second, vs, pass)) {
    return std::move(cached->second);
  }
  return TranslateVirtualService(vs, ServiceContextOf(pass));
}

ServiceContext Translator::ServiceContextOf(const Pass& pass) const {
  return {&pass.index, options_.missing_upstream_status, pass.route_tables_epoch};
}

bool Translator::StillCurrent(const ServiceOutput& cached, const GatewayObject& vs,
                              const Pass& pass) {
  if (cached.digest != vs.content_digest) return false;
  const ServiceDependencies& depends_on = cached.depends_on;
  if (depends_on.route_tables && *depends_on.route_tables != pass.route_tables_epoch) return false;
  const std::vector<size_t>& changed = pass.upstreams_changed;
  return changed.empty() ||
         std::none_of(depends_on.upstreams.begin(), depends_on.upstreams.end(), [&](size_t named) {
           return std::binary_search(changed.begin(), changed.end(), named);
         });
}

std::vector<std::pair<size_t, absl::StatusOr<ServiceOutput>>> Translator::TranslateStale(
    const std::vector<const GatewayObject*>& services,
    const std::vector<ServiceOutputs::iterator>& cached, const Pass& pass) {
  std::vector<std::pair<size_t, absl::StatusOr<ServiceOutput>>> stale;
  for (size_t i = 0; i < services.size(); ++i) {
    if (cached[i] == service_cache_.end() || !StillCurrent(cached[i]->second, *services[i], pass)) {
      stale.emplace_back(i, absl::UnknownError("not translated"));
    }
  }
  const ServiceContext context = ServiceContextOf(pass);
  // Services translate independently from the settled index.
  const int threads = ThreadsFor(stale.size(), options_.threads);
  ParallelFor(stale.size(), threads, [&](size_t j) {
    stale[j].second = TranslateVirtualService(*services[stale[j].first], context);
  });
  return stale;
}

// Virtual services: routes with delegation expanded, for gateways and for
// proxyless gRPC clients. Reused while the service and what its routes
// depend on (the route tables, if it delegates; whether the upstreams it
// names exist) are unchanged; upstream contents and endpoints never matter.
// The cache is updated in place: a change touches the entries it changes.
void Translator::TranslateServices(Pass& pass) {
  const std::vector<const GatewayObject*> services = pass.index.OfKind(kind::kVirtualService);
  std::vector<ServiceOutputs::iterator> cached;
  cached.reserve(services.size());
  auto cursor = service_cache_.begin();
  for (const GatewayObject* vs : services) cached.push_back(SeekKeyOf(service_cache_, cursor, *vs));
  auto translated = TranslateStale(services, cached, pass);
  auto fresh = translated.begin();
  std::vector<ServiceOutputs::iterator> kept;
  kept.reserve(services.size());
  pass.served.reserve(services.size());
  for (size_t i = 0; i < services.size(); ++i) {
    const GatewayObject* vs = services[i];
    if (fresh == translated.end() || fresh->first != i) {  // still current
      ReplayWarnings(cached[i]->second, pass.statuses);
      kept.push_back(cached[i]);
      pass.served.emplace_back(vs, &cached[i]->second);
      continue;
    }
    absl::StatusOr<ServiceOutput> service = std::move((fresh++)->second);
    if (!service.ok()) {
      ObjectStatus& status = pass.statuses[vs->key()];
      status.Reject("spec", std::string(service.status().message()));
      const GatewayObject* last = LastGood(*vs);
      if (last == nullptr || !(service = ServiceFor(*last, cached[i], pass)).ok()) continue;
      pass.index.Add(last);  // gateways see the domains it serves
      status.serving_last_good = true;
      vs = last;
    }
    if (cached[i] != service_cache_.end()) KeepEqualResources(cached[i]->second, *service);
    ReplayWarnings(*service, pass.statuses);
    kept.push_back(StoreAt(service_cache_, cached[i], *vs, *std::move(service)));
    pass.served.emplace_back(vs, &kept.back()->second);
  }
  EraseAllBut(service_cache_, kept);
}

// Gateways: a listener and a route configuration each.
void Translator::TranslateGateways(Pass& pass) {
  std::map<std::pair<std::string, uint32_t>, ObjectKey> bound;
  const GatewayContext context{&pass.index, &pass.served, &domain_owners_, &made_before_};
  for (const GatewayObject* gateway : pass.index.OfKind(kind::kGateway)) {
    const auto& spec = std::get<GatewaySpec>(*gateway->spec);
    ObjectStatus& status = pass.statuses[gateway->key()];
    auto [slot, inserted] =
        bound.emplace(std::make_pair(spec.bind_address, spec.port), gateway->key());
    if (!inserted) {
      status.Reject("spec.port", absl::StrCat(spec.bind_address, ":", spec.port,
                                              " is already used by ", slot->second.ToString()));
      continue;
    }
    GatewayOutput out;
    if (auto error = TranslateGateway(*gateway, context, &out)) {
      status.Reject(error->path, error->message);
      const GatewayObject* last = LastGood(*gateway);
      out = GatewayOutput();
      if (last == nullptr || TranslateGateway(*last, context, &out)) continue;
      status.serving_last_good = true;
    }
    pass.statuses = MergeStatuses(std::move(pass.statuses), out.statuses);
    pass.next_owners.emplace(gateway->key().ToString(), std::move(out.owners));
    for (const ResourcePtr& resource : out.resources) {
      pass.made.emplace(EqualResourceKey(resource->type_url(), resource->name()), resource);
    }
    pass.resources.insert(pass.resources.end(), out.resources.begin(), out.resources.end());
  }
}

// Proxyless gRPC: an API listener per domain, a route config per service.
void Translator::AddGrpcListeners(Pass& pass) {
  bool unroutable = false;
  for (const auto& [vs, service] : pass.served) unroutable |= service->uses_unroutable;
  if (unroutable) {
    for (ResourcePtr& resource : UnroutableCluster()) {
      resource = SameAsBefore(made_before_, std::move(resource));
      pass.made.emplace(EqualResourceKey(resource->type_url(), resource->name()), resource);
      pass.resources.push_back(resource);
    }
  }
  ScopeOwners& listener_owner = pass.next_owners[""];
  ServedServices services = pass.served;  // reordered on a conflict
  const bool disjoint = ClaimGrpcDomains(domain_owners_, services, listener_owner);
  for (const auto& [vs, service] : services) {
    bool any_listener = false;
    for (const auto& [domain, listener] : service->grpc_listeners) {
      if (!disjoint) {
        const ObjectKey& owner = listener_owner.by_domain->find(domain)->second;
        if (!IsKeyOf(owner, *vs)) {
          pass.statuses[vs->key()].Warn(
              "spec.domains",
              absl::StrCat("gRPC clients of ", domain, " are served by ", owner.ToString()));
          continue;
        }
      }
      pass.resources.push_back(listener);
      any_listener = true;
    }
    if (any_listener) pass.resources.push_back(service->grpc_routes);
  }
}

// Remembers what was accepted, for when it breaks.
void Translator::RememberAccepted(
    const std::vector<std::pair<const GatewayObject*, const ObjectStatus*>>& candidates) {
  for (const auto& [object, status] : candidates) {
    if (status->state == StatusState::kRejected) continue;
    last_accepted_.insert_or_assign(object->key(), *object);
  }
}

}  // namespace holdfast
