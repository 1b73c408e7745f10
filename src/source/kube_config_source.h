#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "src/common/clock.h"
#include "src/common/metrics.h"
#include "src/common/poller.h"
#include "src/common/random.h"
#include "src/gateway_api/convert.h"
#include "src/kube/kube_api.h"
#include "src/kube/observed_object.h"
#include "src/kube/reflector.h"
#include "src/model/decode.h"
#include "src/source/config_pipeline.h"
#include "src/source/config_source.h"
#include "src/source/kube_gateway_api.h"
#include "src/source/kube_service_discovery.h"

namespace holdfast {

// The four kinds of holdfast.dev/v1 as API resources.
std::vector<KubeResource> HoldfastResources();
// Whether the source serves without `resource` (its CRD not installed, or
// not readable), translating without its objects.
bool OptionalHoldfastResource(const KubeResource& resource);

// Where statuses say an API object is: "kubernetes:KIND/NAMESPACE/NAME".
std::string KubeLocation(const std::string& kind, const std::string& ns, const std::string& name);

// Gateway objects stored as holdfast.dev/v1 custom resources, translated
// into snapshots (docs/kubernetes.md).
//
// A Reflector per kind (and per watched namespace) keeps a copy of the
// objects; an apply loop decodes each object through the same decoder as
// files (apiVersion, kind, metadata name/namespace/labels and spec, as
// JSON; decoded again only when its resourceVersion changes) and
// translates the whole set. Nothing is translated until every reflector
// has listed once: a partial set would withdraw the kinds not yet read.
// Services and EndpointSlices in the same namespaces are reflected too and
// become `TranslationInput::services` (kube_service_discovery.h); a change to them
// translates like an object change.
// So are the Gateway API's objects (and namespaces, for their labels): they
// become holdfast objects beside the holdfast.dev ones (src/gateway_api/).
// Their CRDs may not be installed: a Gateway API resource the server does
// not serve (404) counts as empty and does not hold translation back; it is
// logged once and listed again with the reflector's backoff, so CRDs
// installed later are picked up. TLS Secrets (for HTTPS listeners) are
// reflected the same way, and also count as empty while RBAC refuses them
// (403: holdfast-tls-secrets is bound per namespace).
// An object that does not decode is Rejected and its last accepted version
// stays in service. API server failures never stop the source: reflectors
// retry with backoff and keep what they hold, and health() says the store
// is unreachable.
class KubeConfigSource : public ConfigSource {
 public:
  struct Options {
    std::vector<std::string> namespaces;  // empty: all namespaces
    TranslatorOptions translator;
    absl::Duration watch_timeout = absl::Seconds(30);
    absl::Duration min_backoff = absl::Milliseconds(200);
    absl::Duration max_backoff = absl::Seconds(5);
    // How often the apply loop looks for changes when not woken.
    absl::Duration apply_interval = absl::Milliseconds(200);
  };

  KubeConfigSource(Options options, KubeApi* api, const Clock& clock, Random& random,
                   MetricsRegistry* metrics, std::function<void(SnapshotPtr)> publish);
  ~KubeConfigSource() override;

  void Start() override;
  void Stop() override;
  // The translation's statuses, with the Gateway API objects' folded in
  // (gateway_api::DebugStatuses).
  StatusMap statuses() const override;
  SourceHealth health() const override;
  void OnStatuses(std::function<void(const StatusMap&)> listener) override {
    pipeline_.OnStatuses(std::move(listener));
  }
  void SetStatusOverlay(StatusMap overlay) override;
  // The Gateway API statuses of the last translation, one per object that
  // holdfast owns; write each with gateway_api::GatewayApiStatusJson to the
  // /status of GatewayApiResourceOf(key.kind). Thread-safe.
  gateway_api::GatewayApiStatuses gateway_api_statuses() const;
  // Called on the apply thread after each translation with those statuses
  // (a status writer's trigger). Set before Start().
  void OnGatewayApiStatuses(std::function<void(const gateway_api::GatewayApiStatuses&)> listener) {
    gateway_api_listener_ = std::move(listener);
  }
  // Like OnStatuses(), with the version of each object the statuses are
  // about (for status.observedGeneration). Replaces an OnStatuses listener.
  void OnObjectStatuses(std::function<void(const StatusMap&, const ObservedObjects&)> listener) {
    pipeline_.OnStatuses([this, listener = std::move(listener)](const StatusMap& statuses) {
      listener(statuses, observed_);
    });
  }

  // Translates what the reflectors hold if it changed (the apply loop's
  // step; public for tests).
  void ApplyIfChanged();

  // Adds one API object to `input`, decoded, or says why it cannot be used.
  static void AddObject(const KubeObject& object, const DecodedFile& decoded,
                        TranslationInput* input);
  // The text the decoder reads for an API object: its identity and spec as
  // JSON, without the fields the API server sets.
  static std::string DecoderText(const nlohmann::json& object);

 private:
  Reflector* AddReflector(const KubeResource& resource, const std::string& ns, KubeApi* api,
                          Random& random);
  static KubeObjects ObjectsOf(const std::vector<Reflector*>& reflectors);
  // Whether every reflector has listed, counting a Gateway API resource the
  // server does not serve as listed (and logging that once).
  bool AllSynced();
  // Adds the Gateway API objects, converted, to `input`.
  gateway_api::Conversion AddGatewayApi(TranslationInput* input);

  const Options options_;
  const Clock& clock_;
  ConfigPipeline pipeline_;  // the apply thread only (but statuses(), SetOverlay())
  MetricsRegistry* metrics_;
  int collector_ = 0;
  std::vector<std::unique_ptr<Reflector>> reflectors_;  // every one, of every resource
  std::vector<Reflector*> object_reflectors_;           // holdfast.dev objects
  std::vector<Reflector*> service_reflectors_;
  std::vector<Reflector*> slice_reflectors_;
  // Gateway API resources and namespaces, by resource name; optional: a
  // 404 means "not installed".
  std::map<std::string, std::vector<Reflector*>> gateway_api_reflectors_;
  // Those, and holdfast.dev resources newer than the first CRDs
  // (OptionalHoldfastResource): a 404 means "not installed".
  std::set<const Reflector*> optional_;
  std::set<std::string> missing_logged_;            // the apply thread only
  KubeServiceDiscovery discovery_;                  // the apply thread only
  ParsedRoutes gateway_api_routes_;                 // the apply thread only
  gateway_api::ConversionCache gateway_api_cache_;  // the apply thread only
  Poller applier_;

  absl::Mutex mu_;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> applied_once_ = false;
  // The apply thread only: decoded objects by location, reused while the
  // object's resourceVersion holds.
  std::map<std::string, std::pair<std::string, DecodedFile>> decoded_;
  ObservedObjects observed_;  // the apply thread only: of the last translation

  std::function<void(const gateway_api::GatewayApiStatuses&)> gateway_api_listener_;
  mutable absl::Mutex gateway_api_mu_;
  // Its sources (its objects moved into the translation's input, its
  // statuses settled into gateway_api_statuses_).
  gateway_api::Conversion conversion_ ABSL_GUARDED_BY(gateway_api_mu_);
  gateway_api::GatewayApiStatuses gateway_api_statuses_ ABSL_GUARDED_BY(gateway_api_mu_);
};

}  // namespace holdfast
