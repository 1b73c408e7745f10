#include "bench/translate/source_bench.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace holdfast {

SourceBenchSize ParseSourceBenchSize(int argc, char** argv) {
  SourceBenchSize size;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--services") size.services = value;
    else if (flag == "--routes") size.routes = value;
    else if (flag == "--upstreams") size.upstreams = value;
    else if (flag == "--changes") size.changes = value;
  }
  return size;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(values.size() * fraction))];
}

std::string GatewayYaml() {
  return "apiVersion: holdfast.dev/v1\nkind: Gateway\nmetadata:\n  name: public\n"
         "  namespace: bench\nspec:\n  port: 8080\n  virtualServiceSelector:\n"
         "    labels: {gateway: public}\n";
}

std::string UpstreamYaml(int i) {
  const std::string octets = absl::StrCat(i / 65536 % 256, ".", i / 256 % 256, ".", i % 256);
  return absl::StrCat(
      "---\napiVersion: holdfast.dev/v1\nkind: Upstream\nmetadata:\n  name: upstream-", i,
      "\n  namespace: bench\nspec:\n  hosts:\n  - {address: 10.", octets,
      ", port: 8080}\n  - {address: 10.1", octets, ", port: 8080}\n");
}

std::string ServiceYaml(int i, int routes, int upstreams, int generation) {
  std::string yaml = absl::StrCat(
      "apiVersion: holdfast.dev/v1\nkind: VirtualService\nmetadata:\n  name: service-", i,
      "\n  namespace: bench\n  labels: {gateway: public}\nspec:\n  domains: [service-", i,
      ".example.com]\n  routes:\n");
  for (int r = 0; r < routes; ++r) {
    absl::StrAppend(&yaml, "  - name: r", r, "\n    match:\n      prefix: /api/v", generation,
                    "/r", r, "\n");
    if (r % 3 == 0) {
      absl::StrAppend(&yaml, "      headers:\n      - {name: x-canary, exact: \"1\"}\n");
    }
    if (r % 2 == 0) {
      absl::StrAppend(&yaml, "    upstream: upstream-", (i * routes + r) % upstreams, "\n");
    } else {
      absl::StrAppend(&yaml, "    upstreams:\n    - {name: upstream-", (i + r) % upstreams,
                      ", weight: 90}\n    - {name: upstream-", (i + r + 1) % upstreams,
                      ", weight: 10}\n");
    }
    absl::StrAppend(&yaml, "    options: {timeout: 5s}\n");
  }
  return yaml;
}

}  // namespace holdfast
