#include "src/source/kube_config_source.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "src/common/log.h"
#include "src/gateway_api/status.h"
#include "src/kube/json_fields.h"
#include "src/model/types.h"

namespace holdfast {

std::vector<KubeResource> HoldfastResources() {
  return {
      {"holdfast.dev", "v1", "gateways", "Gateway"},
      {"holdfast.dev", "v1", "virtualservices", "VirtualService"},
      {"holdfast.dev", "v1", "routetables", "RouteTable"},
      {"holdfast.dev", "v1", "upstreams", "Upstream"},
      {"holdfast.dev", "v1", "rolloutpolicies", "RolloutPolicy"},
  };
}

bool OptionalHoldfastResource(const KubeResource& resource) {
  // Newer than the first CRDs: a cluster whose CRDs predate it still serves.
  return resource.resource == "rolloutpolicies";
}

std::string KubeLocation(const std::string& kind, const std::string& ns, const std::string& name) {
  return absl::StrCat("kubernetes:", kind, "/", ns, "/", name);
}

KubeConfigSource::KubeConfigSource(Options options, KubeApi* api, const Clock& clock,
                                   Random& random, MetricsRegistry* metrics,
                                   std::function<void(SnapshotPtr)> publish)
    : options_(std::move(options)),
      clock_(clock),
      pipeline_("kubernetes", options_.translator, clock, metrics, std::move(publish)),
      metrics_(metrics) {
  std::vector<std::string> namespaces = options_.namespaces;
  if (namespaces.empty()) namespaces.push_back("");
  for (const std::string& ns : namespaces) {
    for (const KubeResource& resource : HoldfastResources()) {
      object_reflectors_.push_back(AddReflector(resource, ns, api, random));
      if (OptionalHoldfastResource(resource)) optional_.insert(object_reflectors_.back());
    }
    service_reflectors_.push_back(AddReflector(ServicesResource(), ns, api, random));
    slice_reflectors_.push_back(AddReflector(EndpointSlicesResource(), ns, api, random));
    std::vector<KubeResource> optional = NamespacedGatewayApiResources();
    optional.push_back(TlsSecretsResource());
    for (const KubeResource& resource : optional) {
      gateway_api_reflectors_[resource.resource].push_back(AddReflector(resource, ns, api, random));
    }
  }
  for (const KubeResource& resource : {GatewayClassesResource(), NamespacesResource()}) {
    gateway_api_reflectors_[resource.resource].push_back(AddReflector(resource, "", api, random));
  }
  for (const auto& [resource, reflectors] : gateway_api_reflectors_) {
    optional_.insert(reflectors.begin(), reflectors.end());
  }
  collector_ = metrics_->AddCollector([this](MetricWriter& out) {
    SourceHealth now = health();
    out.Sample("holdfast_store_connected", "1 while the config store answers", "gauge", {},
               now.connected ? 1 : 0);
  });
}

Reflector* KubeConfigSource::AddReflector(const KubeResource& resource, const std::string& ns,
                                          KubeApi* api, Random& random) {
  Reflector::Options reflector;
  reflector.resource = resource;
  reflector.ns = ns;
  reflector.watch_timeout = options_.watch_timeout;
  reflector.min_backoff = options_.min_backoff;
  reflector.max_backoff = options_.max_backoff;
  reflectors_.push_back(std::make_unique<Reflector>(reflector, api, clock_, random, [this] {
    {
      absl::MutexLock lock(&mu_);
      dirty_ = true;
    }
    applier_.Wake();
  }));
  return reflectors_.back().get();
}

KubeObjects KubeConfigSource::ObjectsOf(const std::vector<Reflector*>& reflectors) {
  KubeObjects all;
  for (const Reflector* reflector : reflectors) all.merge(reflector->objects());
  return all;
}

KubeConfigSource::~KubeConfigSource() {
  Stop();
  metrics_->RemoveCollector(collector_);
}

void KubeConfigSource::Start() {
  for (auto& reflector : reflectors_) reflector->Start();
  applier_.Start(options_.apply_interval, [this] { ApplyIfChanged(); });
}

void KubeConfigSource::Stop() {
  for (auto& reflector : reflectors_) reflector->Stop();
  applier_.Stop();
}

SourceHealth KubeConfigSource::health() const {
  SourceHealth health;
  health.connected = true;
  health.synced_once = applied_once_;
  for (const auto& reflector : reflectors_) {
    Reflector::Health h = reflector->health();
    // A Gateway API CRD not installed, or Secrets not readable, is not an
    // outage.
    if ((h.not_found || h.refused) && optional_.contains(reflector.get())) continue;
    int64_t version = 0;
    if (absl::SimpleAtoi(h.resource_version, &version)) {
      health.revision = std::max(health.revision, version);
    }
    if (health.last_contact == absl::Time() || h.last_contact < health.last_contact) {
      health.last_contact = h.last_contact;
    }
    if (!h.connected && health.connected) {
      health.connected = false;
      health.last_error = absl::StrCat(reflector->options().resource.resource, ": ", h.last_error);
      health.disconnected_since = h.disconnected_since;
      if (h.refused) health.access_error = h.last_error;
    }
  }
  return health;
}

std::string KubeConfigSource::DecoderText(const nlohmann::json& object) {
  nlohmann::json meta = nlohmann::json::object();
  const nlohmann::json& from = JsonField(object, "metadata");
  for (const char* field : {"name", "namespace", "labels"}) {
    if (const nlohmann::json& value = JsonField(from, field); !value.is_null()) meta[field] = value;
  }
  nlohmann::json doc = {{"apiVersion", JsonString(object, "apiVersion")},
                        {"kind", JsonString(object, "kind")},
                        {"metadata", meta}};
  if (const nlohmann::json& spec = JsonField(object, "spec"); !spec.is_null()) doc["spec"] = spec;
  return doc.dump();
}

void KubeConfigSource::AddObject(const KubeObject& object, const DecodedFile& decoded,
                                 TranslationInput* input) {
  const std::string kind = JsonString(object.object, "kind");
  const ObjectKey key{kind, object.ns, object.name};
  const SourceLocation at{KubeLocation(kind, object.ns, object.name), 0};
  std::vector<FieldError>& invalid = input->invalid[key];
  if (decoded.syntax_error) {
    invalid.push_back(FieldError{"", decoded.syntax_error->message, at});
  } else if (decoded.objects.size() != 1) {
    invalid.push_back(FieldError{"", "cannot be decoded", at});
  } else {
    const DecodedObject& one = decoded.objects.front();
    if (one.object && one.key && *one.key == key) {
      GatewayObject gateway_object = *one.object;
      gateway_object.meta.location = at;
      input->objects.emplace(key, std::move(gateway_object));
    } else {
      // The JSON has no useful line numbers: the field path says where.
      for (FieldError error : one.errors.errors()) {
        error.location = at;
        invalid.push_back(std::move(error));
      }
      if (invalid.empty()) invalid.push_back(FieldError{"", "cannot be decoded", at});
    }
  }
  if (invalid.empty()) input->invalid.erase(key);
}

void KubeConfigSource::SetStatusOverlay(StatusMap overlay) {
  pipeline_.SetOverlay(std::move(overlay));
  absl::MutexLock lock(&mu_);
  dirty_ = true;  // translate again: the apply loop reports statuses
}

void KubeConfigSource::ApplyIfChanged() {
  {
    absl::MutexLock lock(&mu_);
    if (!dirty_) return;
  }
  if (!AllSynced()) return;  // a partial set would withdraw a kind
  {
    absl::MutexLock lock(&mu_);
    dirty_ = false;
  }
  TranslationInput input;
  std::map<std::string, std::pair<std::string, DecodedFile>> decoded;
  ObservedObjects observed;
  for (const Reflector* reflector : object_reflectors_) {
    for (const auto& [name, object] : reflector->objects()) {
      const std::string kind = JsonString(object->object, "kind");
      const std::string location = KubeLocation(kind, object->ns, object->name);
      observed[ObjectKey{kind, object->ns, object->name}] = ObserveObject(object->object);
      auto cached = decoded_.find(location);
      if (cached != decoded_.end() && cached->second.first == object->resource_version) {
        decoded.emplace(location, std::move(cached->second));
      } else {
        decoded.emplace(location, std::pair{object->resource_version,
                                            DecodeObjects(DecoderText(object->object), location)});
      }
      AddObject(*object, decoded.at(location).second, &input);
    }
  }
  decoded_ = std::move(decoded);
  observed_ = std::move(observed);
  input.services =
      discovery_.Discover(ObjectsOf(service_reflectors_), ObjectsOf(slice_reflectors_));
  gateway_api::Conversion conversion = AddGatewayApi(&input);
  (void)pipeline_.Apply(input, {});
  gateway_api::GatewayApiStatuses settled =
      gateway_api::SettleStatuses(std::move(conversion.statuses), conversion.made_from,
                                  *pipeline_.shared_statuses());
  if (gateway_api_listener_) gateway_api_listener_(settled);
  {
    absl::MutexLock lock(&gateway_api_mu_);
    conversion_ = std::move(conversion);
    gateway_api_statuses_ = std::move(settled);
  }
  applied_once_ = true;
}

bool KubeConfigSource::AllSynced() {
  for (const auto& reflector : reflectors_) {
    Reflector::Health h = reflector->health();
    const KubeResource& of = reflector->options().resource;
    const std::string resource = of.ApiVersion() + " " + of.resource;
    if (h.synced) {
      missing_logged_.erase(resource);  // served now: log again if it goes
      continue;
    }
    if (!optional_.contains(reflector.get()) || !(h.not_found || h.refused)) return false;
    if (missing_logged_.insert(resource).second) {
      LogInfo("kubernetes: %s %s (%s): translating without them; listing again every few seconds",
              resource,
              h.not_found ? "not served: its CRD not installed?" : "not readable (RBAC)",
              h.last_error);
    }
  }
  return true;
}

gateway_api::Conversion KubeConfigSource::AddGatewayApi(TranslationInput* input) {
  KubeObjectsByResource objects;
  for (const auto& [resource, reflectors] : gateway_api_reflectors_) {
    objects[resource] = ObjectsOf(reflectors);
  }
  gateway_api::Conversion conversion = gateway_api::ConvertGatewayApi(
      GatewayApiInputOf(objects, input->services, &gateway_api_routes_), gateway_api_cache_);
  // Moved: the conversion kept for statuses() reads its sources and statuses.
  for (GatewayObject& object : conversion.objects) {
    ObjectKey key = object.key();
    input->objects[std::move(key)] = std::move(object);
  }
  conversion.objects.clear();
  return conversion;
}

StatusMap KubeConfigSource::statuses() const {
  absl::MutexLock lock(&gateway_api_mu_);
  return gateway_api::DebugStatuses(gateway_api_statuses_, conversion_,
                                    *pipeline_.shared_statuses());
}

gateway_api::GatewayApiStatuses KubeConfigSource::gateway_api_statuses() const {
  absl::MutexLock lock(&gateway_api_mu_);
  return gateway_api_statuses_;
}

}  // namespace holdfast
