// Compiled into envoy_api (cmake/EnvoyProtos.cmake), not holdfast_translate:
// see registered_validators.h.
#include "src/translate/registered_validators.h"

#include "validate/validate.h"

namespace holdfast {

bool CheckRegisteredValidator(const google::protobuf::Message& message, std::string* error) {
  return pgv::BaseValidator::AbstractCheckMessage(message, error);
}

}  // namespace holdfast
