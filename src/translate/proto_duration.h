// absl::Duration into the google.protobuf.Duration fields of Envoy resources.
#pragma once

#include "absl/time/time.h"
#include "google/protobuf/duration.pb.h"
#include "google/protobuf/util/time_util.h"

namespace holdfast {

inline void SetDuration(absl::Duration d, google::protobuf::Duration* out) {
  *out = google::protobuf::util::TimeUtil::NanosecondsToDuration(absl::ToInt64Nanoseconds(d));
}

}  // namespace holdfast
