#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "envoy/config/core/v3/base.pb.h"

namespace holdfast {

// Which staged rollout (src/rollout) a proxy is a canary of, by a rule the
// rollouts replace when their policies change (a RolloutPolicy added to the
// configuration, a percentage changed). Streams ask at their first request
// and subscribe: when the rule changes they ask again and, if their answer
// changed, watch what their new place in the rollout sees. Thread-safe.
class CanaryRouter {
 public:
  // The rollout a node of `group` is a canary of ("" for the rollout of
  // every group without its own), or nullopt.
  using Rule = std::function<std::optional<std::string>(const envoy::config::core::v3::Node& node,
                                                        const std::string& group)>;

  // Ends its subscription when destroyed; the callback is never called
  // after that returns.
  class Subscription {
   public:
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

   private:
    friend class CanaryRouter;
    Subscription(CanaryRouter* router, uint64_t id) : router_(router), id_(id) {}
    CanaryRouter* router_;
    uint64_t id_;
  };

  std::optional<std::string> CanaryOf(const envoy::config::core::v3::Node& node,
                                      const std::string& group) const;
  // Replaces the rule and calls every subscriber, on this thread, one at a
  // time, after the rule is in place. An empty rule: no canaries.
  void SetRule(Rule rule);
  std::unique_ptr<Subscription> Subscribe(std::function<void()> rule_changed);

 private:
  void Unsubscribe(uint64_t id);

  // Held while subscribers are called, so that Unsubscribe waits them out.
  absl::Mutex notify_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::shared_ptr<const Rule> rule_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<std::function<void()>>> subscribers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace holdfast
