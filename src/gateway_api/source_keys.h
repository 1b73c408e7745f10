#pragma once

#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "src/model/object.h"

namespace holdfast::gateway_api {

// The Gateway API objects one holdfast object was made from, in the order
// given, shared by copies: a port's Gateway is made from every route
// attached to the port, and copying 10,000 keys into each conversion's
// output was a tenth of a change of one HTTPRoute. Equal when the keys are.
class SourceKeys {
 public:
  SourceKeys() = default;
  explicit SourceKeys(std::vector<ObjectKey> keys)
      : keys_(std::make_shared<const std::vector<ObjectKey>>(std::move(keys))) {}

  const std::vector<ObjectKey>& keys() const { return keys_ ? *keys_ : Empty(); }
  std::vector<ObjectKey>::const_iterator begin() const { return keys().begin(); }
  std::vector<ObjectKey>::const_iterator end() const { return keys().end(); }
  bool empty() const { return keys().empty(); }
  // These keys, then `more`'s.
  SourceKeys Plus(const SourceKeys& more) const {
    if (empty()) return more;
    if (more.empty()) return *this;
    std::vector<ObjectKey> both = keys();
    both.insert(both.end(), more.begin(), more.end());
    return SourceKeys(std::move(both));
  }

  bool operator==(const SourceKeys& other) const {
    return keys_ == other.keys_ || keys() == other.keys();
  }

 private:
  static const std::vector<ObjectKey>& Empty() {
    static const auto* empty = new std::vector<ObjectKey>();
    return *empty;
  }
  std::shared_ptr<const std::vector<ObjectKey>> keys_;
};

// Each holdfast object a conversion made, and what it was made from.
using MadeFrom = std::map<ObjectKey, SourceKeys>;

}  // namespace holdfast::gateway_api
