#pragma once

#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace holdfast {

// Sets `message` from `json` by reflection, for the common shapes of the
// protobuf JSON mapping: nested messages, lists, strings, booleans, integers
// and doubles, enums by name, wrapper types and Duration. Whenever the input
// holds anything else, or anything protobuf's own JSON parser might read
// differently or refuse (an unknown or repeated field, two fields of one
// oneof, a null, a number in a string, a map, Any, Struct, Timestamp, bytes,
// floats, invalid UTF-8, ...), it returns false without deciding: `message`
// is then partly set and must be cleared and read by
// google::protobuf::util::JsonStringToMessage, which also words the errors.
//
// When it returns true, `message` equals what JsonStringToMessage makes of
// `json.dump()` (with unknown fields refused). Protobuf's reader serializes
// the JSON to binary through a type resolver and parses that back; for the
// endpoint files of a churning fleet that was a third of a reload.
bool ReadJsonMessageExactly(const nlohmann::json& json, google::protobuf::Message* message);

}  // namespace holdfast
