#pragma once

#include <vector>

#include "src/rollout/rollout.h"
#include "src/xds/proxy_state.h"

namespace holdfast {

// Where `canaries` (the streams of a group's canary proxies) stand with
// `candidate`: a proxy has ACKed it when, for every type it asked for, what
// it ACKed holds the candidate's resources at the candidate's versions
// (whichever response brought them: a type that did not change needs no new
// response); it has NACKed it when the latest response of some type was
// NACKed.
CanaryReport ReportCanaries(const std::vector<ProxyView>& canaries, const SnapshotPtr& candidate);

}  // namespace holdfast
