package loadgen

import (
	"sort"
	"strings"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"holdfast.bench/fleetcfg"
)

// Resource types, in the order an ADS client asks for them.
const (
	tCDS = iota
	tEDS
	tLDS
	tRDS
	numTypes
)

var typeURLs = [numTypes]string{
	"type.googleapis.com/envoy.config.cluster.v3.Cluster",
	"type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
	"type.googleapis.com/envoy.config.listener.v3.Listener",
	"type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
}

var typeNames = [numTypes]string{"CDS", "EDS", "LDS", "RDS"}

func typeIndex(url string) int {
	for i, u := range typeURLs {
		if u == url {
			return i
		}
	}
	return -1
}

// nameList is a sorted list of resource names a type's resources refer to
// (EDS names of clusters, RDS names of listeners), shared by every proxy
// that got the same response.
type nameList struct {
	names []string
	key   string

	idsOnce sync.Once
	ids     []int32 // names, interned (idsIn)
}

// idsIn returns the list's names interned in `in`, computed once for every
// proxy that holds the list.
func (a *nameList) idsIn(in *interner) []int32 {
	a.idsOnce.Do(func() {
		a.ids = make([]int32, len(a.names))
		for i, n := range a.names {
			a.ids[i] = in.id(n)
		}
	})
	return a.ids
}

func newNameList(names []string) *nameList {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return &nameList{names: out, key: strings.Join(out, "\x00")}
}

func (a *nameList) same(b *nameList) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	return a.key == b.key
}

// decoded is what the fleet learns from one resource (delta) or one
// response's resource set (state of the world), decoded once.
type decoded struct {
	once  sync.Once
	count int       // resources (SotW)
	name  int32     // interned name (delta)
	gen   int       // highest generation marker among endpoints, -1 if none
	refs  *nameList // names this resource set needs of the next type
	ids   []int32   // SotW endpoints and routes: interned names of the resources
	err   error
}

// decodeCache holds decoded results keyed by type, version, count and a
// hash of the bytes (SotW: a version names a type's state, and two proxies
// may be sent different parts of it) or type, name and version (delta).
// Every proxy that receives the same content shares the work.
type decodeCache struct {
	mu    sync.Mutex
	m     map[string]*decoded
	delta map[deltaKey]*decoded
}

// deltaKey names one resource version: a delta response carries each one
// apart, so at 10,000 proxies of 1,000 clusters a key is looked up ten
// million times while connecting; a struct key spares formatting a string.
type deltaKey struct {
	t             int
	name, version string
}

func (c *decodeCache) entry(key string) *decoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return entryIn(&c.m, key)
}

func (c *decodeCache) deltaEntry(key deltaKey) *decoded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return entryIn(&c.delta, key)
}

// entryIn returns m's entry for key, made empty if absent.
func entryIn[K comparable](m *map[K]*decoded, key K) *decoded {
	if *m == nil {
		*m = map[K]*decoded{}
	}
	d, ok := (*m)[key]
	if !ok {
		d = &decoded{}
		(*m)[key] = d
	}
	return d
}

// decodeSet decodes the given resources of type t.
func decodeSet(t int, values [][]byte) (gen int, refs *nameList, err error) {
	gen = -1
	var names []string
	for _, v := range values {
		switch t {
		case tCDS:
			var c clusterv3.Cluster
			if err = proto.Unmarshal(v, &c); err != nil {
				return
			}
			if c.GetType() == clusterv3.Cluster_EDS {
				n := c.GetEdsClusterConfig().GetServiceName()
				if n == "" {
					n = c.GetName()
				}
				names = append(names, n)
			}
		case tLDS:
			var l listenerv3.Listener
			if err = proto.Unmarshal(v, &l); err != nil {
				return
			}
			for _, fc := range l.GetFilterChains() {
				for _, f := range fc.GetFilters() {
					tc := f.GetTypedConfig()
					if tc == nil || !strings.HasSuffix(tc.GetTypeUrl(), "HttpConnectionManager") {
						continue
					}
					var h hcmv3.HttpConnectionManager
					if err = proto.Unmarshal(tc.GetValue(), &h); err != nil {
						return
					}
					if n := h.GetRds().GetRouteConfigName(); n != "" {
						names = append(names, n)
					}
				}
			}
		case tEDS:
			var cla endpointv3.ClusterLoadAssignment
			if err = proto.Unmarshal(v, &cla); err != nil {
				return
			}
			if g := fleetcfg.GenOf(&cla); g > gen {
				gen = g
			}
		}
	}
	if t == tCDS || t == tLDS {
		refs = newNameList(names)
	}
	return
}

// resourceName reads field 1 (ClusterLoadAssignment.cluster_name,
// RouteConfiguration.name) without decoding the rest.
func resourceName(value []byte) string {
	name := ""
	_ = forEachField(value, func(n protowire.Number, v []byte) error {
		if n == 1 {
			name = string(v)
		}
		return nil
	})
	return name
}

// interner numbers resource names so that proxies track what they hold in
// bitsets instead of maps.
type interner struct {
	mu sync.RWMutex
	m  map[string]int32
}

func (in *interner) id(name string) int32 {
	in.mu.RLock()
	id, ok := in.m[name]
	in.mu.RUnlock()
	if ok {
		return id
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.m == nil {
		in.m = map[string]int32{}
	}
	if id, ok := in.m[name]; ok {
		return id
	}
	id = int32(len(in.m))
	in.m[name] = id
	return id
}

type bitset []uint64

// set sets bit i and reports whether it was clear.
func (b *bitset) set(i int32) bool {
	w := int(i >> 6)
	for len(*b) <= w {
		*b = append(*b, 0)
	}
	m := uint64(1) << (uint(i) & 63)
	if (*b)[w]&m != 0 {
		return false
	}
	(*b)[w] |= m
	return true
}

// clear clears bit i and reports whether it was set.
func (b *bitset) clear(i int32) bool {
	w := int(i >> 6)
	if w >= len(*b) {
		return false
	}
	m := uint64(1) << (uint(i) & 63)
	if (*b)[w]&m == 0 {
		return false
	}
	(*b)[w] &^= m
	return true
}

func (b bitset) has(i int32) bool {
	w := int(i >> 6)
	return w < len(b) && b[w]&(uint64(1)<<(uint(i)&63)) != 0
}
