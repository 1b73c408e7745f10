#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "envoy/config/core/v3/base.pb.h"
#include "envoy/type/matcher/v3/node.pb.h"
#include "re2/re2.h"  // IWYU pragma: keep

namespace holdfast {

// A compiled envoy.type.matcher.v3.NodeMatcher, as CSDS requests carry them:
// the node id's StringMatcher (when set) and every StructMatcher on the
// node's metadata must match. Supported value matchers: null, double (exact
// or range), string (exact, prefix, suffix, contains, safe_regex, with
// ignore_case), bool, present, and list one_of over those. Anything else is
// refused at Compile with the field path, never silently matched.
class NodeMatcher {
 public:
  // `path` names the matcher in errors ("node_matchers[0]").
  static absl::StatusOr<NodeMatcher> Compile(const envoy::type::matcher::v3::NodeMatcher& matcher,
                                             const std::string& path);
  bool Matches(const envoy::config::core::v3::Node& node) const;

  class Value;  // a compiled ValueMatcher

 private:
  struct Struct {
    std::vector<std::string> keys;
    std::shared_ptr<const Value> value;
  };
  std::shared_ptr<const Value> node_id_;  // null: any id
  std::vector<Struct> metadata_;
};

}  // namespace holdfast
