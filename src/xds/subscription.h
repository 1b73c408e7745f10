#pragma once

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "src/xds/name_set.h"

namespace holdfast {

// Which resources of one type a stream asked for, with the xDS wildcard rules
// (xds_protocol.rst, "How the client specifies what resources to return").
// The names are an interned NameSet, so equal subscriptions are the same
// pointer and a stream holds no copy of them.
//
// Delta requests change a few names at a time. Re-interning the whole set for
// each would make a request's cost grow with everything subscribed (a client
// holding 100,000 names could spend 40 ms of our CPU per one-name request), so
// delta changes are kept beside the interned set, `added` and `dropped`, until
// Settle() folds them in: the stream settles when a snapshot arrives, where
// the work is the server's own and the settled set shares its views again.
class Subscription {
 public:
  using Names = google::protobuf::RepeatedPtrField<std::string>;

  explicit Subscription(NameSetPool* pool);

  // State of the world: each request carries the full list of names. The
  // first request with no names is a legacy wildcard, which stays wildcard
  // while later requests are empty too; "*" is an explicit wildcard.
  // Returns whether the subscription (wildcard or names) changed.
  bool ApplySotw(absl::Span<const absl::string_view> names);
  // Delta: requests carry changes. A first request that subscribes nothing is
  // a legacy wildcard; "*" subscribes and unsubscribes the wildcard.
  // Costs the names in the request, not the names subscribed.
  void ApplyDelta(const Names& subscribe, const Names& unsubscribe);
  // Whether applying this delta request would subscribe "*" anew.
  bool AddsWildcard(const Names& subscribe, const Names& unsubscribe) const;

  bool wildcard() const { return wildcard_; }
  // No delta changes pending: names() is the whole subscription.
  bool settled() const { return added_.empty() && dropped_.empty(); }
  // Folds pending delta changes into the interned set (costs every name).
  void Settle();
  // The names asked for by name (besides the wildcard, if any), once settled.
  const NameSet& names() const { return *names_; }
  const NameSetPtr& names_ptr() const { return names_; }
  // How many names are asked for by name, settled or not.
  size_t size() const { return names_->size() + added_.size() - dropped_.size(); }
  // Every name asked for by name, settled or not, in no particular order.
  void ForEachName(absl::FunctionRef<void(const std::string&)> visit) const;
  bool WantsByName(absl::string_view name) const {
    return added_.contains(name) || (names_->contains(name) && !dropped_.contains(name));
  }
  bool Wants(absl::string_view name) const { return wildcard_ || WantsByName(name); }
  // Same wildcard and the same names.
  bool SameAs(bool wildcard, const NameSetPtr& names) const {
    return settled() && wildcard_ == wildcard && names_ == names;
  }

 private:
  NameSetPool* pool_;
  bool seen_request_ = false;
  bool legacy_wildcard_ = false;
  bool wildcard_ = false;
  NameSetPtr names_;
  // Delta changes not yet in names_: names it lacks, names it has.
  absl::flat_hash_set<std::string> added_;
  absl::flat_hash_set<std::string> dropped_;
};

}  // namespace holdfast
