#ifndef HOLDFAST_TRANSLATE_REGISTERED_VALIDATORS_H_
#define HOLDFAST_TRANSLATE_REGISTERED_VALIDATORS_H_

#include <string>

#include <google/protobuf/message.h>

namespace holdfast {

// Checks `message` with the protoc-gen-validate validator registered for its
// type; true when it passes or its type has none, else false with `error`
// set. May throw, as the generated validators do for rules they lack.
//
// Defined in envoy_api, next to the validators that fill the registry, and
// to be called instead of pgv::BaseValidator::AbstractCheckMessage: the
// registry is a function-local static that GCC and clang mangle differently
// (an ABI tag), so code compiled by the other compiler than the prebuilt API
// library (the clang ThreadSanitizer and fuzz builds) would read an empty
// registry and find every message valid.
bool CheckRegisteredValidator(const google::protobuf::Message& message, std::string* error);

}  // namespace holdfast

#endif  // HOLDFAST_TRANSLATE_REGISTERED_VALIDATORS_H_
