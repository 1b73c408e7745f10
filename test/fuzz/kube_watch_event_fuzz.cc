// Fuzz target: a watch stream from the API server (one JSON event per
// line) as the Kubernetes source reads it: each line parsed into an event,
// the object's identity read, the object reduced to what the decoder reads,
// decoded and added to a translation input. The API server relays objects
// written by anyone allowed to write holdfast's kinds; none of this may
// crash or throw.
#include <cstddef>
#include <cstdint>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "src/kube/kube_client.h"
#include "src/kube/reflector.h"
#include "src/source/kube_config_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  holdfast::TranslationInput input;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::StatusOr<std::optional<holdfast::KubeWatchEvent>> event = holdfast::ParseWatchLine(line);
    if (!event.ok() || !event->has_value()) continue;
    auto object = holdfast::MakeKubeObject((*event)->object);
    const std::string decoder_text = holdfast::KubeConfigSource::DecoderText(object->object);
    holdfast::KubeConfigSource::AddObject(*object, holdfast::DecodeObjects(decoder_text, "fuzz"),
                                          &input);
  }
  return 0;
}
