// Package fleetcfg builds the benchmark's xDS resources: EDS clusters with
// their ClusterLoadAssignments, one RouteConfiguration and listeners whose
// HttpConnectionManager loads it over RDS (ADS) with the router filter.
//
// The same resources go to every server: holdfast reads them as JSON files
// from a directory (WriteDir, WriteEndpoints), the go-control-plane peer
// builds its snapshot from the Go values directly, the java-control-plane
// peer builds the same values in Java (bench/javapeer/.../Fleet.java) and the
// floor in C++ (bench/floor/fleet.cc): keep both in step with this file.
//
// Every ClusterLoadAssignment carries the generation of its last change in
// its locality's sub_zone ("g<N>"); a change also moves the endpoints' ports.
// The load generator reads the marker to know which change a proxy holds.
package fleetcfg

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Params sizes the configuration.
type Params struct {
	Clusters            int // EDS clusters, each with its own ClusterLoadAssignment
	Routes              int // routes in the one RouteConfiguration
	EndpointsPerCluster int
	Listeners           int // listeners, all loading the one RouteConfiguration over RDS
}

// RouteConfigName is the name of the one RouteConfiguration.
const RouteConfigName = "bench-routes"

// ClusterName is the name of cluster i (also its ClusterLoadAssignment's).
func ClusterName(i int) string { return fmt.Sprintf("cluster-%05d", i) }

// ListenerName is the name of listener j.
func ListenerName(j int) string { return fmt.Sprintf("listener-%d", j) }

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// Cluster returns cluster i: EDS over ADS, round robin.
func Cluster(i int) *clusterv3.Cluster {
	return &clusterv3.Cluster{
		Name:                 ClusterName(i),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		ConnectTimeout:       durationpb.New(time.Second),
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
	}
}

// LoadAssignment returns cluster i's endpoints at generation gen.
func (p Params) LoadAssignment(i, gen int) *endpointv3.ClusterLoadAssignment {
	eps := make([]*endpointv3.LbEndpoint, 0, p.EndpointsPerCluster)
	for k := 0; k < p.EndpointsPerCluster; k++ {
		port := 1024 + ((i*p.EndpointsPerCluster+k)*7+gen*13)%64000
		eps = append(eps, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{
					SocketAddress: &corev3.SocketAddress{
						Address:       "127.0.0.1",
						PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(port)},
					},
				}},
			}},
		})
	}
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: ClusterName(i),
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality:            &corev3.Locality{Region: "bench", Zone: "zone-a", SubZone: GenMarker(gen)},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         eps,
		}},
	}
}

// GenMarker is the sub_zone that marks generation gen.
func GenMarker(gen int) string { return "g" + strconv.Itoa(gen) }

// ParseGenMarker reads a GenMarker; ok is false if s is not one.
func ParseGenMarker(s string) (int, bool) {
	if !strings.HasPrefix(s, "g") {
		return 0, false
	}
	n, err := strconv.Atoi(s[1:])
	return n, err == nil
}

// GenOf returns the generation marked in a ClusterLoadAssignment (-1 if none).
func GenOf(cla *endpointv3.ClusterLoadAssignment) int {
	gen := -1
	for _, l := range cla.GetEndpoints() {
		if g, ok := ParseGenMarker(l.GetLocality().GetSubZone()); ok && g > gen {
			gen = g
		}
	}
	return gen
}

// RouteConfig returns the one RouteConfiguration: one virtual host with
// p.Routes prefix routes spread over the clusters.
func (p Params) RouteConfig() *routev3.RouteConfiguration {
	routes := make([]*routev3.Route, 0, p.Routes)
	for k := 0; k < p.Routes; k++ {
		routes = append(routes, &routev3.Route{
			Name:  fmt.Sprintf("route-%05d", k),
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: fmt.Sprintf("/svc-%05d/", k)}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: ClusterName(k % p.Clusters)},
				Timeout:          durationpb.New(5 * time.Second),
			}},
		})
	}
	return &routev3.RouteConfiguration{
		Name:         RouteConfigName,
		VirtualHosts: []*routev3.VirtualHost{{Name: "bench", Domains: []string{"*"}, Routes: routes}},
	}
}

// Listener returns listener j: an HttpConnectionManager that loads the route
// configuration over RDS (ADS) and ends in the router filter.
func Listener(j int) *listenerv3.Listener {
	router, err := anypb.New(&routerv3.Router{})
	if err != nil {
		panic(err)
	}
	hcm, err := anypb.New(&hcmv3.HttpConnectionManager{
		StatPrefix: "ingress_http",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: RouteConfigName,
			ConfigSource:    adsSource(),
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: router},
		}},
	})
	if err != nil {
		panic(err)
	}
	return &listenerv3.Listener{
		Name: ListenerName(j),
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       "127.0.0.1",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(10000 + j)},
		}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: hcm},
		}}}},
	}
}

// ChangedClusters returns the clusters that change at generation gen (>= 1)
// when a fraction frac of them changes per generation: consecutive windows
// that walk round the clusters. frac <= 0 means exactly one cluster.
func (p Params) ChangedClusters(gen int, frac float64) []int {
	n := 1
	if frac > 0 {
		n = int(float64(p.Clusters)*frac + 0.5)
		if n < 1 {
			n = 1
		}
	}
	if n > p.Clusters {
		n = p.Clusters
	}
	start := ((gen - 1) * n) % p.Clusters
	out := make([]int, n)
	for k := range out {
		out[k] = (start + k) % p.Clusters
	}
	return out
}

// --- holdfast's directory format ---

func fileJSON(msgs []proto.Message) ([]byte, error) {
	var b strings.Builder
	b.WriteString("{\"resources\":[\n")
	opts := protojson.MarshalOptions{UseProtoNames: true}
	for k, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			return nil, err
		}
		j, err := opts.Marshal(a)
		if err != nil {
			return nil, err
		}
		if k > 0 {
			b.WriteString(",\n")
		}
		b.Write(j)
	}
	b.WriteString("\n]}\n")
	return []byte(b.String()), nil
}

// writeAtomic writes path through a hidden temporary file and a rename, so
// the server never reads a half-written file (it skips dot files).
func writeAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WriteDir writes the whole configuration at generation 0 into dir:
// listeners.json, routes.json, clusters.json and endpoints/<cluster>.json
// (one file per cluster, so a change re-parses only what changed).
func (p Params) WriteDir(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "endpoints"), 0o755); err != nil {
		return err
	}
	var ls, cs []proto.Message
	for j := 0; j < p.Listeners; j++ {
		ls = append(ls, Listener(j))
	}
	for i := 0; i < p.Clusters; i++ {
		cs = append(cs, Cluster(i))
	}
	files := map[string][]proto.Message{
		"listeners.json": ls,
		"routes.json":    {p.RouteConfig()},
		"clusters.json":  cs,
	}
	for name, msgs := range files {
		data, err := fileJSON(msgs)
		if err != nil {
			return err
		}
		if err := writeAtomic(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	all := make([]int, p.Clusters)
	for i := range all {
		all[i] = i
	}
	return p.WriteEndpoints(dir, all, 0)
}

// EndpointFile returns the content of cluster i's endpoint file at
// generation gen.
func (p Params) EndpointFile(i, gen int) ([]byte, error) {
	return fileJSON([]proto.Message{p.LoadAssignment(i, gen)})
}

// WriteEndpoints rewrites the endpoint files of the given clusters at
// generation gen.
func (p Params) WriteEndpoints(dir string, clusters []int, gen int) error {
	files := make([][]byte, len(clusters))
	for k, i := range clusters {
		data, err := p.EndpointFile(i, gen)
		if err != nil {
			return err
		}
		files[k] = data
	}
	return WriteEndpointFiles(dir, clusters, files)
}

// WriteEndpointFiles writes prepared endpoint files (files[k] for cluster
// clusters[k]).
func WriteEndpointFiles(dir string, clusters []int, files [][]byte) error {
	for k, i := range clusters {
		if err := writeAtomic(filepath.Join(dir, "endpoints", ClusterName(i)+".json"), files[k]); err != nil {
			return err
		}
	}
	return nil
}
