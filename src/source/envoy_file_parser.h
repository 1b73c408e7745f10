#pragma once

#include <memory>
#include <string>
#include <vector>

#include "google/protobuf/message.h"

namespace holdfast {

// A resource read from a file, before validation.
struct ParsedResource {
  std::string type_url;
  std::string name;
  int line = 0;  // 1-based line where the resource starts
  std::unique_ptr<google::protobuf::Message> message;
};

// Something in a file that could not become a resource.
struct FileProblem {
  int line = 0;          // 0 when the problem is the whole file
  std::string type_url;  // when known
  std::string name;      // when known
  std::string message;   // what is wrong, with the field path when there is one
};

struct ParsedFile {
  std::vector<ParsedResource> resources;
  std::vector<FileProblem> problems;
  // True when the file as a whole could not be read (YAML syntax): nothing in
  // it is known, so whatever it held before should be kept.
  bool unreadable = false;
};

// Parses Envoy resources from YAML or JSON text, in Envoy's file
// subscription format: each document is either a DiscoveryResponse-like map
// with a `resources` list, or a single resource; every resource carries its
// type in "@type" and uses the protobuf JSON mapping. One bad resource does
// not stop the others from being parsed. A file that is one JSON object
// takes a faster reader with the same result (see ReadJsonResourceDocument).
ParsedFile ParseEnvoyResources(const std::string& contents);

// The general path: reads `contents` as YAML (JSON is YAML). For tests that
// hold the two paths to the same result.
ParsedFile ParseEnvoyResourcesAsYaml(const std::string& contents);

// The name of an xDS resource (Listener.name, ClusterLoadAssignment
// .cluster_name, ...); empty when the type has no name field.
std::string ResourceNameOf(const google::protobuf::Message& message);

}  // namespace holdfast
