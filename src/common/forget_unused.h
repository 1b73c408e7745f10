#pragma once

#include <map>

#include "absl/container/flat_hash_map.h"

namespace holdfast {

// Ends one round of a cache whose entries carry a `used` flag, set when a
// round reads or writes them: erases the entries this round did not use
// and clears the flag of the rest, so memory follows what still exists.
template <typename Map>
void ForgetUnused(Map& entries) {
  // absl's or std's erase_if, found by the map's namespace.
  erase_if(entries, [](const auto& entry) { return !entry.second.used; });
  for (auto& [key, entry] : entries) entry.used = false;
}

}  // namespace holdfast
