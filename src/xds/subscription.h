#pragma once

#include <set>
#include <string>
#include "absl/strings/string_view.h"

#include "google/protobuf/repeated_ptr_field.h"

namespace holdfast {

// Which resources of one type a stream asked for, with the xDS wildcard rules
// (xds_protocol.rst, "How the client specifies what resources to return").
class Subscription {
 public:
  using Names = google::protobuf::RepeatedPtrField<std::string>;

  // State of the world: each request carries the full list of names. The
  // first request with no names is a legacy wildcard, which stays wildcard
  // while later requests are empty too; "*" is an explicit wildcard.
  void ApplySotw(const Names& names);
  // Delta: requests carry changes. A first request that subscribes nothing is
  // a legacy wildcard; "*" subscribes and unsubscribes the wildcard.
  void ApplyDelta(const Names& subscribe, const Names& unsubscribe);

  bool wildcard() const { return wildcard_; }
  const std::set<std::string, std::less<>>& names() const { return names_; }
  bool Wants(absl::string_view name) const { return wildcard_ || names_.contains(name); }

 private:
  bool seen_request_ = false;
  bool legacy_wildcard_ = false;
  bool wildcard_ = false;
  std::set<std::string, std::less<>> names_;
};

}  // namespace holdfast
