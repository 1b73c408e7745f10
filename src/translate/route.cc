#include "src/translate/route.h"

#include "absl/strings/str_join.h"
#include "envoy/extensions/filters/http/cors/v3/cors.pb.h"
#include "src/translate/proto_duration.h"

namespace holdfast {
namespace {

namespace route_v3 = envoy::config::route::v3;
using envoy::type::matcher::v3::StringMatcher;

void ToStringMatcher(const StringMatch& match, StringMatcher* out) {
  switch (match.kind) {
    case StringMatch::Kind::kExact:
      out->set_exact(match.value);
      break;
    case StringMatch::Kind::kPrefix:
      out->set_prefix(match.value);
      break;
    case StringMatch::Kind::kSuffix:
      out->set_suffix(match.value);
      break;
    case StringMatch::Kind::kRegex:
      out->mutable_safe_regex()->set_regex(match.value);
      break;
    case StringMatch::Kind::kPresent:
      break;
  }
}

void AddHeaders(const HeaderEdits& edits,
                google::protobuf::RepeatedPtrField<envoy::config::core::v3::HeaderValueOption>* add,
                google::protobuf::RepeatedPtrField<std::string>* remove) {
  using envoy::config::core::v3::HeaderValueOption;
  for (const auto& [name, value] : edits.add) {
    auto* option = add->Add();
    option->mutable_header()->set_key(name);
    option->mutable_header()->set_value(value);
    option->set_append_action(HeaderValueOption::APPEND_IF_EXISTS_OR_ADD);
  }
  for (const auto& [name, value] : edits.set) {
    auto* option = add->Add();
    option->mutable_header()->set_key(name);
    option->mutable_header()->set_value(value);
    option->set_append_action(HeaderValueOption::OVERWRITE_IF_EXISTS_OR_ADD);
  }
  for (const std::string& name : edits.remove) *remove->Add() = name;
}

// gRPC C++ core 1.51 reads only the older per-kind header matcher fields;
// Envoy reads both. They are deprecated in the API, and used on purpose.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void ToLegacyHeaderMatcher(const StringMatch& match, route_v3::HeaderMatcher* out) {
  switch (match.kind) {
    case StringMatch::Kind::kExact:
      out->set_exact_match(match.value);
      break;
    case StringMatch::Kind::kPrefix:
      out->set_prefix_match(match.value);
      break;
    case StringMatch::Kind::kSuffix:
      out->set_suffix_match(match.value);
      break;
    case StringMatch::Kind::kRegex:
      out->mutable_safe_regex_match()->set_regex(match.value);
      break;
    case StringMatch::Kind::kPresent:
      out->set_present_match(true);
      break;
  }
}
#pragma GCC diagnostic pop

route_v3::RouteMatch TranslateMatch(const RouteMatch& match, bool for_grpc) {
  route_v3::RouteMatch out;
  switch (match.path.kind) {
    case StringMatch::Kind::kExact:
      out.set_path(match.path.value);
      break;
    case StringMatch::Kind::kRegex:
      out.mutable_safe_regex()->set_regex(match.path.value);
      break;
    default:
      out.set_prefix(match.path.value.empty() ? "/" : match.path.value);
      break;
  }
  for (const HeaderMatch& header : match.headers) {
    auto* h = out.add_headers();
    h->set_name(header.name);
    h->set_invert_match(header.invert);
    if (for_grpc) {
      ToLegacyHeaderMatcher(header.match, h);
    } else if (header.match.kind == StringMatch::Kind::kPresent) {
      h->set_present_match(true);
    } else {
      ToStringMatcher(header.match, h->mutable_string_match());
    }
  }
  for (const QueryParamMatch& param : match.query_params) {
    auto* q = out.add_query_parameters();
    q->set_name(param.name);
    if (param.match.kind == StringMatch::Kind::kPresent) {
      q->set_present_match(true);
    } else {
      ToStringMatcher(param.match, q->mutable_string_match());
    }
  }
  if (!match.methods.empty()) {
    StringMatch method =
        match.methods.size() == 1
            ? StringMatch{StringMatch::Kind::kExact, match.methods[0]}
            : StringMatch{StringMatch::Kind::kRegex,
                          absl::StrCat("^(", absl::StrJoin(match.methods, "|"), ")$")};
    auto* h = out.add_headers();
    h->set_name(":method");
    if (for_grpc) {
      ToLegacyHeaderMatcher(method, h);
    } else {
      ToStringMatcher(method, h->mutable_string_match());
    }
  }
  return out;
}

void MissingUpstream(const ObjectRef& ref, const std::string& ns, const Route& route,
                     const std::string& field, const RouteTarget& target, ObjectStatus* status,
                     route_v3::Route* out) {
  const std::string full = absl::StrCat(ref.ns.empty() ? ns : ref.ns, "/", ref.name);
  status->Warn(
      absl::StrCat(route.path, ".", field),
      absl::StrCat("upstream ", full, " not found; the route answers ",
                   target.missing_upstream_status, " (gRPC clients: RPCs fail UNAVAILABLE)"),
      route.location);
  out->clear_route();
  if (target.for_grpc) {
    // gRPC clients take only forwarding routes (grpc-js rejects the whole
    // route configuration otherwise); the unroutable cluster fails them fast.
    out->mutable_route()->set_cluster(kUnroutableCluster);
    return;
  }
  out->mutable_direct_response()->set_status(target.missing_upstream_status);
  out->mutable_direct_response()->mutable_body()->set_inline_string(
      absl::StrCat("upstream ", full, " not found\n"));
}

// Mirrors whose upstream is missing are left out (the route itself still
// forwards); gRPC clients do not mirror, so they get none.
void AddMirrors(const Route& route, const std::string& ns, const RouteTarget& target,
                ObjectStatus* status, route_v3::RouteAction* action) {
  if (target.for_grpc) return;
  for (size_t i = 0; i < route.options.mirrors.size(); ++i) {
    const RequestMirror& mirror = route.options.mirrors[i];
    const std::string cluster = target.resolve_upstream(mirror.upstream);
    if (cluster.empty()) {
      const ObjectRef& ref = mirror.upstream;
      status->Warn(absl::StrCat(route.path, ".options.mirrors[", i, "].upstream"),
                   absl::StrCat("upstream ", ref.ns.empty() ? ns : ref.ns, "/", ref.name,
                                " not found; requests are not mirrored to it"),
                   route.location);
      continue;
    }
    auto* policy = action->add_request_mirror_policies();
    policy->set_cluster(cluster);
    if (mirror.per_million < 1'000'000) {
      auto* share = policy->mutable_runtime_fraction()->mutable_default_value();
      share->set_numerator(mirror.per_million);
      share->set_denominator(envoy::type::v3::FractionalPercent::MILLION);
    }
  }
}

// What a route that forwards does besides choosing its upstreams.
void ApplyForwardingOptions(const Route& route, const std::string& ns, const RouteTarget& target,
                            ObjectStatus* status, route_v3::RouteAction* action) {
  const RouteOptions& options = route.options;
  if (!options.prefix_rewrite.empty()) action->set_prefix_rewrite(options.prefix_rewrite);
  if (!options.host_rewrite.empty()) action->set_host_rewrite_literal(options.host_rewrite);
  if (options.timeout) SetDuration(*options.timeout, action->mutable_timeout());
  if (options.retries) {
    auto* retry = action->mutable_retry_policy();
    retry->set_retry_on(options.retries->retry_on);
    retry->mutable_num_retries()->set_value(options.retries->num_retries);
    if (options.retries->per_try_timeout) {
      SetDuration(*options.retries->per_try_timeout, retry->mutable_per_try_timeout());
    }
  }
  AddMirrors(route, ns, target, status, action);
}

// The route to weighted upstreams; false when one of them is missing (the
// route then answers as MissingUpstream says).
bool TranslateWeighted(const std::vector<WeightedUpstream>& weighted, const Route& route,
                       const std::string& ns, const RouteTarget& target, ObjectStatus* status,
                       route_v3::Route* out) {
  auto* clusters = out->mutable_route()->mutable_weighted_clusters();
  for (size_t i = 0; i < weighted.size(); ++i) {
    const WeightedUpstream& w = weighted[i];
    std::string cluster = target.resolve_upstream(w.upstream);
    if (cluster.empty()) {
      MissingUpstream(w.upstream, ns, route, absl::StrCat("upstreams[", i, "]"), target, status,
                      out);
      return false;
    }
    if (w.weight == 0) continue;  // zero weight: drained, and gRPC rejects it
    auto* c = clusters->add_clusters();
    c->set_name(cluster);
    c->mutable_weight()->set_value(w.weight);
    // gRPC C++ core 1.51 assumes 100 when total_weight (deprecated in the
    // API) is absent.
    if (target.for_grpc) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
      clusters->mutable_total_weight()->set_value(clusters->total_weight().value() + w.weight);
#pragma GCC diagnostic pop
    }
  }
  return true;
}

route_v3::RedirectAction::RedirectResponseCode RedirectCode(uint32_t code) {
  switch (code) {
    case 302:
      return route_v3::RedirectAction::FOUND;
    case 303:
      return route_v3::RedirectAction::SEE_OTHER;
    case 307:
      return route_v3::RedirectAction::TEMPORARY_REDIRECT;
    case 308:
      return route_v3::RedirectAction::PERMANENT_REDIRECT;
    default:
      return route_v3::RedirectAction::MOVED_PERMANENTLY;
  }
}

void TranslateRedirect(const Redirect& redirect, route_v3::RedirectAction* r) {
  if (!redirect.host.empty()) r->set_host_redirect(redirect.host);
  if (!redirect.path.empty()) r->set_path_redirect(redirect.path);
  if (!redirect.prefix_rewrite.empty()) r->set_prefix_rewrite(redirect.prefix_rewrite);
  if (redirect.https) r->set_https_redirect(true);
  if (redirect.port != 0) r->set_port_redirect(redirect.port);
  r->set_response_code(RedirectCode(redirect.code));
}

// Envoy's CORS filter config for one route.
envoy::extensions::filters::http::cors::v3::CorsPolicy TranslateCors(const CorsPolicy& options) {
  envoy::extensions::filters::http::cors::v3::CorsPolicy cors;
  for (const StringMatch& origin : options.allow_origins) {
    ToStringMatcher(origin, cors.add_allow_origin_string_match());
  }
  cors.set_allow_methods(absl::StrJoin(options.allow_methods, ","));
  cors.set_allow_headers(absl::StrJoin(options.allow_headers, ","));
  cors.set_expose_headers(absl::StrJoin(options.expose_headers, ","));
  if (options.max_age) cors.set_max_age(absl::StrCat(absl::ToInt64Seconds(*options.max_age)));
  cors.mutable_allow_credentials()->set_value(options.allow_credentials);
  return cors;
}

// What the route does: forward (to one upstream or several), redirect or
// answer directly.
void TranslateAction(const Route& route, const std::string& ns, const RouteTarget& target,
                     ObjectStatus* status, route_v3::Route* out) {
  if (const auto* single = std::get_if<ObjectRef>(&route.action)) {
    std::string cluster = target.resolve_upstream(*single);
    if (cluster.empty()) {
      MissingUpstream(*single, ns, route, "upstream", target, status, out);
      return;
    }
    out->mutable_route()->set_cluster(cluster);
    ApplyForwardingOptions(route, ns, target, status, out->mutable_route());
  } else if (const auto* weighted = std::get_if<std::vector<WeightedUpstream>>(&route.action)) {
    if (TranslateWeighted(*weighted, route, ns, target, status, out)) {
      ApplyForwardingOptions(route, ns, target, status, out->mutable_route());
    }
  } else if (target.for_grpc) {
    // Redirects and direct responses mean nothing to an RPC, and grpc-js
    // rejects a route configuration that has them: such routes fail RPCs.
    out->mutable_route()->set_cluster(kUnroutableCluster);
  } else if (const auto* redirect = std::get_if<Redirect>(&route.action)) {
    TranslateRedirect(*redirect, out->mutable_redirect());
  } else if (const auto* direct = std::get_if<DirectResponse>(&route.action)) {
    out->mutable_direct_response()->set_status(direct->status);
    if (!direct->body.empty()) {
      out->mutable_direct_response()->mutable_body()->set_inline_string(direct->body);
    }
  }
}

}  // namespace

bool UsesCors(const Route& route) { return route.options.cors.has_value(); }

// ":" appears in no object name, so no Upstream can ever share this name.
const char kUnroutableCluster[] = "holdfast:unroutable";

route_v3::Route TranslateRoute(const Route& route, const std::string& ns, const RouteTarget& target,
                               ObjectStatus* status) {
  route_v3::Route out;
  if (!route.name.empty()) out.set_name(route.name);
  *out.mutable_match() = TranslateMatch(route.match, target.for_grpc);
  TranslateAction(route, ns, target, status, &out);
  const RouteOptions& options = route.options;
  AddHeaders(options.request_headers, out.mutable_request_headers_to_add(),
             out.mutable_request_headers_to_remove());
  AddHeaders(options.response_headers, out.mutable_response_headers_to_add(),
             out.mutable_response_headers_to_remove());
  if (options.cors && !target.for_grpc) {
    (*out.mutable_typed_per_filter_config())["envoy.filters.http.cors"].PackFrom(
        TranslateCors(*options.cors));
  }
  return out;
}

}  // namespace holdfast
