#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "src/xds/name_set.h"

namespace holdfast {

// Which resources of one type a stream asked for, with the xDS wildcard rules
// (xds_protocol.rst, "How the client specifies what resources to return").
// The names are an interned NameSet, so equal subscriptions are the same
// pointer and a stream holds no copy of them.
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
  void ApplyDelta(const Names& subscribe, const Names& unsubscribe);

  bool wildcard() const { return wildcard_; }
  // The names asked for by name (besides the wildcard, if any).
  const NameSet& names() const { return *names_; }
  const NameSetPtr& names_ptr() const { return names_; }
  bool Wants(absl::string_view name) const { return wildcard_ || names_->contains(name); }
  // Same wildcard and the same names.
  bool SameAs(bool wildcard, const NameSetPtr& names) const {
    return wildcard_ == wildcard && names_ == names;
  }

 private:
  NameSetPool* pool_;
  bool seen_request_ = false;
  bool legacy_wildcard_ = false;
  bool wildcard_ = false;
  NameSetPtr names_;
};

}  // namespace holdfast
