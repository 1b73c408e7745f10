// Model-based tests of both sessions: a simulated client applies every
// response the way Envoy and gRPC do, through random snapshots, subscription
// changes and reconnects, and after each step must hold exactly what the
// snapshot says for everything it asks for.
#include <map>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "src/xds/delta_session.h"
#include "src/xds/sotw_session.h"
#include "test/unit/test_resources.h"

namespace holdfast {
namespace {

using envoy::service::discovery::v3::DeltaDiscoveryRequest;
using envoy::service::discovery::v3::DiscoveryRequest;
using Holdings = std::map<std::string, std::string>;  // name -> version

const std::string kCds(type_url::kCluster);
const std::string kEds(type_url::kClusterLoadAssignment);
constexpr int kUniverse = 8;
constexpr int kMaxResponsesPerStep = 12;

std::string ClusterName(int i) { return "c" + std::to_string(i); }

SnapshotPtr RandomSnapshot(std::mt19937& rng) {
  std::vector<ResourcePtr> resources;
  for (int i = 0; i < kUniverse; ++i) {
    if (rng() % 4 == 0) continue;  // absent
    resources.push_back(testing::EdsCluster(ClusterName(i), 1 + static_cast<int>(rng() % 2)));
    resources.push_back(testing::Endpoints(ClusterName(i), 8000 + static_cast<int>(rng() % 3)));
  }
  return testing::Build(std::move(resources));
}

std::vector<std::string> RandomNames(std::mt19937& rng) {
  std::vector<std::string> names;
  for (int i = 0; i < kUniverse + 2; ++i) {  // two names that never exist
    if (rng() % 2 == 0) names.push_back(ClusterName(i));
  }
  // Never none: a first delta request naming nothing is a wildcard.
  if (names.empty()) names.push_back(ClusterName(0));
  return names;
}

Holdings View(const SnapshotPtr& snapshot, const std::string& type) {
  Holdings view;
  for (const auto& [name, resource] : snapshot->Resources(type)) view[name] = resource->version();
  return view;
}

// The client must hold the snapshot's version of every name it asks for that
// exists. `exact` also forbids holding asked-for names that do not exist.
void ExpectHolds(const Holdings& held, const SnapshotPtr& snapshot,
                 const std::set<std::string>& asked, bool exact, const std::string& where) {
  Holdings want = View(snapshot, kEds);
  for (const std::string& name : asked) {
    auto w = want.find(name);
    auto h = held.find(name);
    if (w != want.end()) {
      ASSERT_TRUE(h != held.end()) << where << ": " << name << " missing";
      EXPECT_EQ(h->second, w->second) << where << ": " << name << " stale";
    } else if (exact) {
      EXPECT_TRUE(h == held.end()) << where << ": " << name << " should have been removed";
    }
  }
}

class SotwClient {
 public:
  SotwClient(ViewCache* views, ProxyState* proxy, XdsStats* stats)
      : views_(views), proxy_(proxy), stats_(stats) {
    Reconnect();
  }

  void Reconnect() {
    session_ = std::make_unique<SotwSession>("", clock_, proxy_, stats_, views_);
    nonces_.clear();
    Send(kCds, {});
    Send(kEds, asked_);
  }
  void Subscribe(std::vector<std::string> names) {
    // Like Envoy, the client drops the endpoints of what it no longer asks
    // for, so asking again must bring them back.
    std::set<std::string> now(names.begin(), names.end());
    std::erase_if(holds_[kEds], [&](const auto& kv) { return !now.contains(kv.first); });
    asked_ = std::move(names);
    Send(kEds, asked_);
  }
  void OnSnapshot(SnapshotPtr snapshot) { session_->OnSnapshot(std::move(snapshot)); }

  // Applies responses until none is owed; false if that never happens.
  bool Drain() {
    for (int i = 0; i < kMaxResponsesPerStep; ++i) {
      std::optional<Response> r = session_->NextResponse();
      if (!r.has_value()) return true;
      Holdings& held = holds_[r->type_url];
      // Listener and cluster responses are the whole state; others only say
      // what they carry.
      if (IsFullStateType(r->type_url)) held.clear();
      for (const ResourcePtr& res : r->resources()) held[res->name()] = res->version();
      nonces_[r->type_url] = r->nonce;
      Send(r->type_url, r->type_url == kEds ? asked_ : std::vector<std::string>{});
    }
    return false;
  }

  const Holdings& held(const std::string& type) { return holds_[type]; }
  std::set<std::string> asked() const { return {asked_.begin(), asked_.end()}; }

 private:
  void Send(const std::string& type, const std::vector<std::string>& names) {
    DiscoveryRequest request;
    request.set_type_url(type);
    for (const std::string& n : names) request.add_resource_names(n);
    request.set_response_nonce(nonces_[type]);
    ASSERT_TRUE(session_->OnRequest(request).ok());
  }

  ViewCache* views_;
  ProxyState* proxy_;
  XdsStats* stats_;
  SimulatedClock clock_;
  std::unique_ptr<SotwSession> session_;
  std::map<std::string, std::string> nonces_;
  std::vector<std::string> asked_ = {"c0", "c1"};
  std::map<std::string, Holdings> holds_;
};

class DeltaClient {
 public:
  DeltaClient(ViewCache* views, ProxyState* proxy, XdsStats* stats)
      : views_(views), proxy_(proxy), stats_(stats) {
    Reconnect();
  }

  void Reconnect() {
    session_ = std::make_unique<DeltaSession>("", clock_, proxy_, stats_, views_);
    for (const std::string& type : {kCds, kEds}) {
      DeltaDiscoveryRequest request;
      request.set_type_url(type);
      if (type == kEds) {
        for (const std::string& n : asked_) request.add_resource_names_subscribe(n);
      }
      for (const auto& [name, version] : holds_[type]) {
        (*request.mutable_initial_resource_versions())[name] = version;
      }
      ASSERT_TRUE(session_->OnRequest(request).ok());
    }
  }
  void Subscribe(std::vector<std::string> names) {
    std::set<std::string> now(names.begin(), names.end());
    DeltaDiscoveryRequest request;
    request.set_type_url(kEds);
    for (const std::string& n : now) {
      if (!asked_.contains(n)) request.add_resource_names_subscribe(n);
    }
    for (const std::string& n : asked_) {
      if (!now.contains(n)) {
        request.add_resource_names_unsubscribe(n);
        holds_[kEds].erase(n);  // a client forgets what it unsubscribes
      }
    }
    asked_ = std::move(now);
    ASSERT_TRUE(session_->OnRequest(request).ok());
  }
  void OnSnapshot(SnapshotPtr snapshot) { session_->OnSnapshot(std::move(snapshot)); }

  bool Drain() {
    for (int i = 0; i < kMaxResponsesPerStep; ++i) {
      std::optional<Response> r = session_->NextResponse();
      if (!r.has_value()) return true;
      Holdings& held = holds_[r->type_url];
      for (const ResourcePtr& res : r->resources()) held[res->name()] = res->version();
      for (const std::string& name : r->removed) {
        EXPECT_TRUE(held.erase(name) == 1) << "removal of " << name << " which the client lacks";
      }
      DeltaDiscoveryRequest ack;
      ack.set_type_url(r->type_url);
      ack.set_response_nonce(r->nonce);
      EXPECT_TRUE(session_->OnRequest(ack).ok());
    }
    return false;
  }

  const Holdings& held(const std::string& type) { return holds_[type]; }
  const std::set<std::string>& asked() const { return asked_; }

 private:
  ViewCache* views_;
  ProxyState* proxy_;
  XdsStats* stats_;
  SimulatedClock clock_;
  std::unique_ptr<DeltaSession> session_;
  std::set<std::string> asked_ = {"c0", "c1"};
  std::map<std::string, Holdings> holds_;
};

template <typename Client>
void RunModel(uint32_t seed, bool exact_eds) {
  std::mt19937 rng(seed);
  ViewCache views;
  MetricsRegistry metrics;
  XdsStats stats(&metrics);
  ProxyState proxy(1, "model", "test", absl::UnixEpoch());
  // Several clients share the cache, as a fleet does.
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<Client>(&views, &proxy, &stats));
  SnapshotPtr snapshot = RandomSnapshot(rng);
  for (auto& c : clients) c->OnSnapshot(snapshot);
  for (int step = 0; step < 300; ++step) {
    const std::string where = "seed " + std::to_string(seed) + " step " + std::to_string(step);
    Client& client = *clients[rng() % clients.size()];
    switch (rng() % 4) {
      case 0:
      case 1:
        snapshot = RandomSnapshot(rng);
        for (auto& c : clients) c->OnSnapshot(snapshot);
        break;
      case 2:
        client.Subscribe(RandomNames(rng));
        break;
      case 3:
        client.Reconnect();
        client.OnSnapshot(snapshot);
        break;
    }
    for (auto& c : clients) {
      ASSERT_TRUE(c->Drain()) << where << ": responses never stop";
      EXPECT_EQ(c->held(kCds), View(snapshot, kCds)) << where;
      ExpectHolds(c->held(kEds), snapshot, c->asked(), exact_eds, where);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(SessionModelTest, SotwClientsAlwaysHoldWhatTheyAskFor) {
  for (uint32_t seed = 1; seed <= 40; ++seed) RunModel<SotwClient>(seed, /*exact_eds=*/false);
}

TEST(SessionModelTest, DeltaClientsHoldExactlyWhatTheyAskFor) {
  for (uint32_t seed = 1; seed <= 40; ++seed) RunModel<DeltaClient>(seed, /*exact_eds=*/true);
}

}  // namespace
}  // namespace holdfast
