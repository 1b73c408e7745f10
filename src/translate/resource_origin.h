#pragma once

#include <vector>

#include "src/model/object.h"
#include "src/snapshot/resource.h"

namespace holdfast {

// A gateway object behind a changed resource, and whether the resource
// already held a version of that object's part (so that version is what a
// proxy keeps when it refuses the change).
struct ResourceOrigin {
  ObjectKey object;
  bool served_before = false;
};

// The gateway objects whose change makes `after` differ from `before` (null:
// `after` is new): what a proxy's rejection of `after` is reported on. Read
// back from the names the translator gives (src/translate/names.h):
//   Cluster, ClusterLoadAssignment "NS/NAME"   -> Upstream NS/NAME
//   Listener "gateway/NS/NAME"                 -> Gateway NS/NAME
//   RouteConfiguration "gateway/NS/NAME"       -> the VirtualServices whose
//      virtual hosts (named "NS/NAME") it adds or changes; the Gateway when
//      it changes none
//   RouteConfiguration "grpc/NS/NAME"          -> VirtualService NS/NAME
//   an API listener (named by a domain)        -> the VirtualService of the
//                                                 route configuration it loads
// Empty for resources no gateway object translates to (holdfast's own,
// resources from raw Envoy files).
std::vector<ResourceOrigin> OriginsOfChange(const Resource* before, const Resource& after);

}  // namespace holdfast
