package holdfast.bench.javapeer;

import com.sun.net.httpserver.HttpServer;
import io.envoyproxy.controlplane.server.DefaultExecutorGroup;
import io.envoyproxy.controlplane.server.DiscoveryServerCallbacks;
import io.envoyproxy.controlplane.server.V3DiscoveryServer;
import io.envoyproxy.controlplane.server.serializer.CachedProtoResourcesSerializer;
import io.envoyproxy.controlplane.server.serializer.DefaultProtoResourcesSerializer;
import io.envoyproxy.controlplane.server.serializer.ProtoResourcesSerializer;
import io.envoyproxy.envoy.service.discovery.v3.DeltaDiscoveryRequest;
import io.envoyproxy.envoy.service.discovery.v3.DiscoveryRequest;
import io.grpc.Attributes;
import io.grpc.Server;
import io.grpc.ServerTransportFilter;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * javapeer is the benchmark's java-control-plane peer: java-control-plane's V3DiscoveryServer (ADS,
 * state of the world and delta) over its SimpleCache, on grpc-java's Netty transport, serving the
 * same resources as holdfast and hfpeer get from bench/fleetcfg (mirrored in {@link Fleet}), with
 * hfpeer's command line and HTTP control endpoint, so that hfbench drives all of them alike.
 *
 * <p>Set up as the example server that java-control-plane's README points to (TestMain: a
 * SimpleCache whose node-group function maps every node to one group, so every proxy shares one
 * snapshot; the V3DiscoveryServer's ADS service on a NettyServerBuilder), with the library's
 * CachedProtoResourcesSerializer, which it provides for one message sent to many proxies: each
 * resource is packed once for all streams.
 * java-control-plane has no counterpart of go-control-plane's LinearCache: a change is a new
 * snapshot, and a SotW proxy gets every endpoint assignment again (delta: only the changed ones).
 *
 * <p>Transport as holdfast's and hfpeer's: static 64 KiB HTTP/2 windows (flowControlWindow turns
 * grpc-java's BDP-based window tuning off), keepalive pings after 60 s idle with a 30 s timeout,
 * client pings allowed every 10 s even without calls. Memory as hfpeer's: once a second has passed
 * without a publication or a stream opening or closing, a System.gc(), which with G1 and a low
 * -XX:MaxHeapFreeRatio (set by hfbench) gives the freed heap back to the OS, as hfpeer's
 * debug.FreeOSMemory and holdfast's malloc_trim do.
 *
 * <pre>
 * HTTP on --admin-listen:
 *   GET  /readyz                        200 once the first snapshot is set
 *   POST /change?gen=N&amp;clusters=1,2,3   set those clusters' endpoints to generation N; answers
 *                                       at once, a publisher thread then sets a snapshot of the
 *                                       newest state (changes that arrive meanwhile are merged)
 * </pre>
 */
public final class Main {
  static {
    // java-control-plane logs each cancelled stream at INFO: keep the log to warnings and errors
    // unless -Dorg.slf4j.simpleLogger.defaultLogLevel says otherwise (before any logger exists).
    if (System.getProperty("org.slf4j.simpleLogger.defaultLogLevel") == null) {
      System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    }
    System.setProperty("org.slf4j.simpleLogger.showDateTime", "true");
  }

  private static final int WINDOW = 64 << 10;
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSS");

  static void log(String msg) {
    System.err.println(LocalTime.now().format(TIME) + " " + msg);
  }

  private static void usage(String error) {
    if (error != null) {
      System.err.println("javapeer: " + error);
    }
    System.err.println(String.join("\n",
        "usage: java -jar javapeer.jar [flags]",
        "  --xds-listen ADDR    xDS gRPC address (127.0.0.1:0)",
        "  --admin-listen ADDR  HTTP control address (127.0.0.1:0)",
        "  --ports-file PATH    write {\"xds\":PORT,\"admin\":PORT} here once listening",
        "  --clusters N         EDS clusters (1000)",
        "  --routes N           routes in the route configuration (1000)",
        "  --endpoints N        endpoints per cluster (3)",
        "  --listeners N        listeners (2)",
        "  --cache snapshot     the only cache java-control-plane has (SimpleCache)",
        "  --serializer KIND    cached (CachedProtoResourcesSerializer, default) or default"));
    System.exit(2);
  }

  /** Go flag syntax: -name value, --name value, -name=value, --name=value. */
  private static Map<String, String> parseFlags(String[] args, Map<String, String> defaults) {
    Map<String, String> out = new LinkedHashMap<>(defaults);
    for (int k = 0; k < args.length; k++) {
      String a = args[k];
      if (a.equals("-h") || a.equals("--help") || a.equals("-help")) {
        usage(null);
      }
      if (!a.startsWith("-")) {
        usage("unexpected argument " + a);
      }
      String name = a.replaceFirst("^--?", "");
      String value;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        value = name.substring(eq + 1);
        name = name.substring(0, eq);
      } else {
        if (k + 1 >= args.length) {
          usage("flag needs an argument: " + a);
        }
        value = args[++k];
      }
      if (!defaults.containsKey(name)) {
        usage("flag provided but not defined: -" + name);
      }
      out.put(name, value);
    }
    return out;
  }

  private static int intFlag(Map<String, String> f, String name) {
    try {
      return Integer.parseInt(f.get(name));
    } catch (NumberFormatException e) {
      usage("invalid value \"" + f.get(name) + "\" for flag -" + name);
      return 0;
    }
  }

  private static InetSocketAddress address(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    if (colon < 0) {
      usage("bad address " + hostPort + ": want HOST:PORT");
    }
    String host = hostPort.substring(0, colon).replaceAll("^\\[|\\]$", "");
    int port = Integer.parseInt(hostPort.substring(colon + 1));
    return new InetSocketAddress(host.isEmpty() ? "0.0.0.0" : host, port);
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> defaults = new LinkedHashMap<>();
    defaults.put("xds-listen", "127.0.0.1:0");
    defaults.put("admin-listen", "127.0.0.1:0");
    defaults.put("ports-file", "");
    defaults.put("clusters", "1000");
    defaults.put("routes", "1000");
    defaults.put("endpoints", "3");
    defaults.put("listeners", "2");
    defaults.put("cache", "snapshot");
    defaults.put("serializer", "cached");
    Map<String, String> f = parseFlags(args, defaults);
    if (!f.get("cache").equals("snapshot")) {
      usage("--cache " + f.get("cache") + ": java-control-plane has only the snapshot cache");
    }
    ProtoResourcesSerializer serializer;
    switch (f.get("serializer")) {
      case "cached":
        serializer = new CachedProtoResourcesSerializer();
        break;
      case "default":
        serializer = new DefaultProtoResourcesSerializer();
        break;
      default:
        usage("--serializer " + f.get("serializer") + ": want cached or default");
        return;
    }
    Fleet fleet = new Fleet(intFlag(f, "clusters"), intFlag(f, "routes"),
        intFlag(f, "endpoints"), intFlag(f, "listeners"));

    Peer peer = new Peer(fleet);
    peer.publish();
    peer.startPublisher();

    DiscoveryServerCallbacks streams = new DiscoveryServerCallbacks() {
      @Override
      public void onStreamOpen(long streamId, String typeUrl) {
        peer.activity.incrementAndGet();
      }

      @Override
      public void onStreamClose(long streamId, String typeUrl) {
        peer.activity.incrementAndGet();
      }

      @Override
      public void onStreamCloseWithError(long streamId, String typeUrl, Throwable error) {
        peer.activity.incrementAndGet();
      }

      @Override
      public void onV3StreamRequest(long streamId, DiscoveryRequest request) {}

      @Override
      public void onV3StreamDeltaRequest(long streamId, DeltaDiscoveryRequest request) {}
    };
    V3DiscoveryServer discovery = new V3DiscoveryServer(List.of(streams), peer.cache,
        new DefaultExecutorGroup(), serializer);

    Server grpc = NettyServerBuilder.forAddress(address(f.get("xds-listen")))
        .addService(discovery.getAggregatedDiscoveryServiceImpl())
        .maxConcurrentCallsPerConnection(1 << 20)
        .flowControlWindow(WINDOW) // static: no BDP probing, as holdfast's
        .keepAliveTime(60, TimeUnit.SECONDS)
        .keepAliveTimeout(30, TimeUnit.SECONDS)
        .permitKeepAliveTime(10, TimeUnit.SECONDS)
        .permitKeepAliveWithoutCalls(true)
        // A stream cancelled by the client runs none of java-control-plane's close callbacks:
        // count its connection's end (one stream per proxy connection) as activity too.
        .addTransportFilter(new ServerTransportFilter() {
          @Override
          public void transportTerminated(Attributes transportAttrs) {
            peer.activity.incrementAndGet();
          }
        })
        .build()
        .start();

    HttpServer admin = HttpServer.create(address(f.get("admin-listen")), 0);
    admin.createContext("/change", peer::change);
    admin.createContext("/readyz", peer::readyz);
    admin.start();

    int xdsPort = grpc.getPort();
    int adminPort = admin.getAddress().getPort();
    String portsFile = f.get("ports-file");
    if (!portsFile.isEmpty()) {
      Path path = Path.of(portsFile).toAbsolutePath();
      Path tmp = path.resolveSibling("." + path.getFileName() + ".tmp");
      Files.writeString(tmp, "{\"xds\":" + xdsPort + ",\"admin\":" + adminPort + "}",
          StandardCharsets.UTF_8);
      Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }
    Runtime rt = Runtime.getRuntime();
    log(String.format("javapeer: xds %s:%d admin %s:%d, %d clusters %d routes %d endpoints/cluster"
            + " %d listeners; java %s, max heap %d MiB, %d processors, serializer %s",
        address(f.get("xds-listen")).getHostString(), xdsPort,
        address(f.get("admin-listen")).getHostString(), adminPort,
        fleet.clusters, fleet.routes, fleet.endpointsPerCluster, fleet.listeners,
        System.getProperty("java.version"), rt.maxMemory() >> 20, rt.availableProcessors(),
        f.get("serializer")));

    startMemoryReturn(peer);
    rt.addShutdownHook(new Thread(() -> {
      admin.stop(0);
      grpc.shutdownNow();
    }));
    grpc.awaitTermination();
  }

  /**
   * Once a second has passed without activity, a full collection: with G1 and a low
   * MaxHeapFreeRatio it uncommits the freed heap, so that resident memory is compared like for
   * like with hfpeer (debug.FreeOSMemory) and holdfast (malloc_trim).
   */
  private static void startMemoryReturn(Peer peer) {
    ScheduledExecutorService tick = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "memory-return");
      t.setDaemon(true);
      return t;
    });
    long[] state = {peer.activity.get(), 0}; // last seen, last collected at
    tick.scheduleAtFixedRate(() -> {
      long now = peer.activity.get();
      if (now == state[0] && now != state[1]) {
        System.gc();
        state[1] = now;
      }
      state[0] = now;
    }, 1, 1, TimeUnit.SECONDS);
  }

  private Main() {}
}
