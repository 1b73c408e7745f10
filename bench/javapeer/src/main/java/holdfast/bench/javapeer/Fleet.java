package holdfast.bench.javapeer;

import com.google.protobuf.Any;
import com.google.protobuf.Duration;
import com.google.protobuf.UInt32Value;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.core.v3.Address;
import io.envoyproxy.envoy.config.core.v3.AggregatedConfigSource;
import io.envoyproxy.envoy.config.core.v3.ApiVersion;
import io.envoyproxy.envoy.config.core.v3.ConfigSource;
import io.envoyproxy.envoy.config.core.v3.Locality;
import io.envoyproxy.envoy.config.core.v3.SocketAddress;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.endpoint.v3.Endpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LbEndpoint;
import io.envoyproxy.envoy.config.endpoint.v3.LocalityLbEndpoints;
import io.envoyproxy.envoy.config.listener.v3.Filter;
import io.envoyproxy.envoy.config.listener.v3.FilterChain;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.Route;
import io.envoyproxy.envoy.config.route.v3.RouteAction;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import io.envoyproxy.envoy.config.route.v3.RouteMatch;
import io.envoyproxy.envoy.config.route.v3.VirtualHost;
import io.envoyproxy.envoy.extensions.filters.http.router.v3.Router;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.HttpFilter;
import io.envoyproxy.envoy.extensions.filters.network.http_connection_manager.v3.Rds;

/**
 * The benchmark's xDS resources, built exactly as bench/fleetcfg/fleetcfg.go builds them for
 * holdfast and hfpeer: the same names and the same field values, so that all peers serve the same
 * bytes. Keep the two in step: a change there needs the same change here.
 *
 * <p>EDS clusters over ADS with their ClusterLoadAssignments (the generation of the last change in
 * the locality's sub_zone, "g&lt;N&gt;", and ports that move with it), one RouteConfiguration and
 * listeners whose HttpConnectionManager loads it over RDS (ADS) and ends in the router filter.
 */
final class Fleet {
  /** The name of the one RouteConfiguration (fleetcfg.RouteConfigName). */
  static final String ROUTE_CONFIG_NAME = "bench-routes";

  final int clusters;
  final int routes;
  final int endpointsPerCluster;
  final int listeners;

  Fleet(int clusters, int routes, int endpointsPerCluster, int listeners) {
    this.clusters = clusters;
    this.routes = routes;
    this.endpointsPerCluster = endpointsPerCluster;
    this.listeners = listeners;
  }

  static String clusterName(int i) {
    return String.format("cluster-%05d", i);
  }

  static String listenerName(int j) {
    return "listener-" + j;
  }

  static String genMarker(int gen) {
    return "g" + gen;
  }

  private static ConfigSource adsSource() {
    return ConfigSource.newBuilder()
        .setAds(AggregatedConfigSource.getDefaultInstance())
        .setResourceApiVersion(ApiVersion.V3)
        .build();
  }

  private static Duration seconds(long s) {
    return Duration.newBuilder().setSeconds(s).build();
  }

  private static Address socketAddress(String ip, int port) {
    return Address.newBuilder()
        .setSocketAddress(SocketAddress.newBuilder().setAddress(ip).setPortValue(port))
        .build();
  }

  /** Cluster i: EDS over ADS, round robin (fleetcfg.Cluster). */
  static Cluster cluster(int i) {
    return Cluster.newBuilder()
        .setName(clusterName(i))
        .setType(Cluster.DiscoveryType.EDS)
        .setConnectTimeout(seconds(1))
        .setLbPolicy(Cluster.LbPolicy.ROUND_ROBIN)
        .setEdsClusterConfig(Cluster.EdsClusterConfig.newBuilder().setEdsConfig(adsSource()))
        .build();
  }

  /** Cluster i's endpoints at generation gen (fleetcfg.Params.LoadAssignment). */
  ClusterLoadAssignment loadAssignment(int i, int gen) {
    LocalityLbEndpoints.Builder locality = LocalityLbEndpoints.newBuilder()
        .setLocality(Locality.newBuilder()
            .setRegion("bench")
            .setZone("zone-a")
            .setSubZone(genMarker(gen)))
        .setLoadBalancingWeight(UInt32Value.of(1));
    for (int k = 0; k < endpointsPerCluster; k++) {
      // Go's int is 64 bits: the same arithmetic in long.
      long port = 1024 + (((long) i * endpointsPerCluster + k) * 7 + (long) gen * 13) % 64000;
      locality.addLbEndpoints(LbEndpoint.newBuilder()
          .setEndpoint(Endpoint.newBuilder().setAddress(socketAddress("127.0.0.1", (int) port))));
    }
    return ClusterLoadAssignment.newBuilder()
        .setClusterName(clusterName(i))
        .addEndpoints(locality)
        .build();
  }

  /**
   * The one RouteConfiguration: one virtual host with `routes` prefix routes spread over the
   * clusters (fleetcfg.Params.RouteConfig).
   */
  RouteConfiguration routeConfig() {
    VirtualHost.Builder vh = VirtualHost.newBuilder().setName("bench").addDomains("*");
    for (int k = 0; k < routes; k++) {
      vh.addRoutes(Route.newBuilder()
          .setName(String.format("route-%05d", k))
          .setMatch(RouteMatch.newBuilder().setPrefix(String.format("/svc-%05d/", k)))
          .setRoute(RouteAction.newBuilder()
              .setCluster(clusterName(k % clusters))
              .setTimeout(seconds(5))));
    }
    return RouteConfiguration.newBuilder().setName(ROUTE_CONFIG_NAME).addVirtualHosts(vh).build();
  }

  /**
   * Listener j: an HttpConnectionManager that loads the route configuration over RDS (ADS) and
   * ends in the router filter (fleetcfg.Listener).
   */
  static Listener listener(int j) {
    HttpConnectionManager hcm = HttpConnectionManager.newBuilder()
        .setStatPrefix("ingress_http")
        .setRds(Rds.newBuilder().setRouteConfigName(ROUTE_CONFIG_NAME).setConfigSource(adsSource()))
        .addHttpFilters(HttpFilter.newBuilder()
            .setName("envoy.filters.http.router")
            .setTypedConfig(Any.pack(Router.getDefaultInstance())))
        .build();
    return Listener.newBuilder()
        .setName(listenerName(j))
        .setAddress(socketAddress("127.0.0.1", 10000 + j))
        .addFilterChains(FilterChain.newBuilder()
            .addFilters(Filter.newBuilder()
                .setName("envoy.filters.network.http_connection_manager")
                .setTypedConfig(Any.pack(hcm))))
        .build();
  }
}
