#pragma once
// Decodes holdfast objects written by the conversion (JSON in the format of
// docs/configuration.md) with the decoder files go through, so that they
// are checked exactly as a user's objects are, and names them.

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "nlohmann/json.hpp"
#include "src/model/field_errors.h"
#include "src/model/types.h"

namespace holdfast::gateway_api {

// Decodes `spec` as an object of `kind` in `ns`, then names it `name` (a
// synthesized name the decoder would refuse: that is what keeps it apart
// from users' objects). Errors go to `errors`, paths as the decoder's.
//
// The document is decoded from the JSON as it is (DecodeJson), with the
// results its text would give (parsing the text and writing it out again
// for a digest cost two thirds of a first conversion); the text is the
// cache key. Every change to a Gateway API object converts them all again:
// a decoder remembers what each text decoded to and reuses it while the
// text is the same, so a change to one of 10,000 HTTPRoutes decodes one
// object, not 10,000. Not thread-safe: one conversion at a time.
class HoldfastObjectDecoder {
 public:
  std::optional<GatewayObject> Decode(const std::string& kind, const std::string& ns,
                                      const std::string& name, const nlohmann::json& spec,
                                      FieldErrors* errors);

  // Ends a conversion: forgets the texts it did not decode, so that memory
  // follows the objects that exist.
  void EndConversion();

  size_t remembered() const { return entries_.size(); }
  // How many documents were decoded from their text (a string not UTF-8).
  size_t decoded_as_text() const { return decoded_as_text_; }

 private:
  struct Entry {
    std::optional<GatewayObject> object;  // named "synthesized"
    std::vector<FieldError> errors;
    bool used = true;
  };
  // By the object's location (file) and the decoder's input text.
  absl::flat_hash_map<std::string, Entry> entries_;
  size_t decoded_as_text_ = 0;
};

}  // namespace holdfast::gateway_api
