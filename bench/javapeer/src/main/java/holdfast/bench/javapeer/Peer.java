package holdfast.bench.javapeer;

import com.sun.net.httpserver.HttpExchange;
import io.envoyproxy.controlplane.cache.v3.SimpleCache;
import io.envoyproxy.controlplane.cache.v3.Snapshot;
import io.envoyproxy.envoy.config.cluster.v3.Cluster;
import io.envoyproxy.envoy.config.endpoint.v3.ClusterLoadAssignment;
import io.envoyproxy.envoy.config.listener.v3.Listener;
import io.envoyproxy.envoy.config.route.v3.RouteConfiguration;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The peer's state: one SimpleCache whose node-group function puts every node in one group, so
 * every proxy shares one snapshot, as every holdfast node does. Clusters, listeners and the route
 * configuration never change here and keep their objects and versions ("c1", "l1", "r1"); the
 * endpoints' version is "g&lt;newest generation&gt;", as hfpeer's snapshot cache has it. A change
 * replaces the changed clusters' assignments and a publisher thread sets a new snapshot of the
 * newest state; changes that arrive while it is busy are merged into its next snapshot, as with
 * hfpeer's publisher goroutine.
 */
final class Peer {
  static final String GROUP = "fleet";

  final Fleet fleet;
  final SimpleCache<String> cache = new SimpleCache<>(node -> GROUP);
  /** Publications and streams opened or closed: what "quiet" means for memory return. */
  final AtomicLong activity = new AtomicLong();

  private final List<Cluster> clusters;
  private final List<Listener> listeners;
  private final List<RouteConfiguration> routes;

  private final Object lock = new Object();
  private final ClusterLoadAssignment[] endpoints; // per cluster, current generation
  private int gen; // newest generation asked for
  private boolean ready;

  /** One pending publication at most, like a Go channel of capacity 1. */
  private final BlockingQueue<Boolean> kick = new ArrayBlockingQueue<>(1);

  Peer(Fleet fleet) {
    this.fleet = fleet;
    List<Cluster> cs = new ArrayList<>(fleet.clusters);
    endpoints = new ClusterLoadAssignment[fleet.clusters];
    for (int i = 0; i < fleet.clusters; i++) {
      cs.add(Fleet.cluster(i));
      endpoints[i] = fleet.loadAssignment(i, 0);
    }
    clusters = List.copyOf(cs);
    List<Listener> ls = new ArrayList<>(fleet.listeners);
    for (int j = 0; j < fleet.listeners; j++) {
      ls.add(Fleet.listener(j));
    }
    listeners = List.copyOf(ls);
    routes = List.of(fleet.routeConfig());
  }

  /** Sets a snapshot of the newest state. */
  void publish() {
    activity.incrementAndGet();
    List<ClusterLoadAssignment> eps;
    int g;
    synchronized (lock) {
      eps = Arrays.asList(endpoints.clone());
      g = gen;
    }
    Snapshot snap = Snapshot.create(
        clusters, "c1",
        eps, Fleet.genMarker(g),
        listeners, "l1",
        routes, "r1",
        List.of(), "");
    // No snap.ensureConsistent(): java-control-plane 1.0.49 finds a listener's RDS name only
    // under the filter name "envoy.http_connection_manager", long deprecated in Envoy, and
    // fleetcfg's listeners use "envoy.filters.network.http_connection_manager", so the check
    // would reject this consistent snapshot. The resources are consistent by construction.
    cache.setSnapshot(GROUP, snap);
    synchronized (lock) {
      ready = true;
    }
  }

  boolean ready() {
    synchronized (lock) {
      return ready;
    }
  }

  /** Publishes after every kick, merging kicks that arrive meanwhile. */
  void startPublisher() {
    Thread t = new Thread(() -> {
      while (true) {
        try {
          kick.take();
        } catch (InterruptedException e) {
          return;
        }
        try {
          publish();
        } catch (RuntimeException e) {
          Main.log("publish: " + e);
        }
      }
    }, "publisher");
    t.setDaemon(true);
    t.start();
  }

  /** POST /change?gen=N&clusters=1,2,3: set those clusters' endpoints to generation N. */
  void change(HttpExchange ex) throws IOException {
    try (ex) {
      if (!"POST".equals(ex.getRequestMethod())) {
        reply(ex, 405, "POST only\n");
        return;
      }
      Map<String, String> q = query(ex.getRequestURI());
      int g;
      try {
        g = Integer.parseInt(q.getOrDefault("gen", ""));
      } catch (NumberFormatException e) {
        g = 0;
      }
      if (g < 1) {
        reply(ex, 400, "bad gen\n");
        return;
      }
      // split(..., -1) keeps empty fields, as Go's strings.Split does: "" and "1,," are errors.
      String[] fields = q.getOrDefault("clusters", "").split(",", -1);
      int[] ids = new int[fields.length];
      for (int k = 0; k < fields.length; k++) {
        int i;
        try {
          i = Integer.parseInt(fields[k]);
        } catch (NumberFormatException e) {
          i = -1;
        }
        if (i < 0 || i >= fleet.clusters) {
          reply(ex, 400, "bad cluster " + fields[k] + "\n");
          return;
        }
        ids[k] = i;
      }
      ClusterLoadAssignment[] eps = new ClusterLoadAssignment[ids.length];
      for (int k = 0; k < ids.length; k++) {
        eps[k] = fleet.loadAssignment(ids[k], g);
      }
      synchronized (lock) {
        for (int k = 0; k < ids.length; k++) {
          endpoints[ids[k]] = eps[k];
        }
        if (g > gen) {
          gen = g;
        }
      }
      // offer() fails if a publication is already pending: that one will see this change.
      kick.offer(Boolean.TRUE);
      ex.sendResponseHeaders(204, -1);
    }
  }

  /** GET /readyz: 200 once the first snapshot is set. */
  void readyz(HttpExchange ex) throws IOException {
    try (ex) {
      if (!ready()) {
        reply(ex, 503, "no snapshot\n");
        return;
      }
      reply(ex, 200, "ok\n");
    }
  }

  private static void reply(HttpExchange ex, int status, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
    ex.sendResponseHeaders(status, b.length);
    try (OutputStream out = ex.getResponseBody()) {
      out.write(b);
    }
  }

  private static Map<String, String> query(URI uri) {
    Map<String, String> out = new HashMap<>();
    String raw = uri.getRawQuery();
    if (raw == null) {
      return out;
    }
    for (String kv : raw.split("&")) {
      int eq = kv.indexOf('=');
      String k = eq < 0 ? kv : kv.substring(0, eq);
      String v = eq < 0 ? "" : kv.substring(eq + 1);
      out.putIfAbsent(URLDecoder.decode(k, StandardCharsets.UTF_8),
          URLDecoder.decode(v, StandardCharsets.UTF_8));
    }
    return out;
  }
}
