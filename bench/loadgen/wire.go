package loadgen

import (
	"errors"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// rawCodec marshals requests as protobuf and hands responses over as bytes,
// so the load generator decodes only the few fields it needs and decodes each
// distinct resource version once for the whole fleet.
type rawCodec struct{}

type rawMsg struct{ b []byte }

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMsg)
	if !ok {
		return errors.New("rawCodec: unexpected message type")
	}
	m.b = data.Materialize()
	return nil
}

// forEachField calls fn for every top-level field of a serialized message;
// val is the payload of length-delimited fields, nil otherwise.
func forEachField(b []byte, fn func(num protowire.Number, val []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var val []byte
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protowire.ParseError(m)
			}
			val, n = v, m
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
		}
		b = b[n:]
		if err := fn(num, val); err != nil {
			return err
		}
	}
	return nil
}

// firstString returns the string in field 1 of a message: the name of a
// Cluster, Listener, RouteConfiguration and ClusterLoadAssignment.
func firstString(b []byte) string {
	var out string
	_ = forEachField(b, func(num protowire.Number, val []byte) error {
		if num == 1 && out == "" {
			out = string(val)
		}
		return nil
	})
	return out
}

// sotwResponse is a DiscoveryResponse with its resources left encoded.
type sotwResponse struct {
	version, typeURL, nonce string
	resources               [][]byte // Any.value of each resource
}

func parseSotw(b []byte) (sotwResponse, error) {
	var r sotwResponse
	err := forEachField(b, func(num protowire.Number, val []byte) error {
		switch num {
		case 1:
			r.version = string(val)
		case 2:
			_ = forEachField(val, func(n protowire.Number, v []byte) error {
				if n == 2 {
					r.resources = append(r.resources, v)
				}
				return nil
			})
		case 4:
			r.typeURL = string(val)
		case 5:
			r.nonce = string(val)
		}
		return nil
	})
	return r, err
}

// deltaResource is one DeltaDiscoveryResponse.resources entry.
type deltaResource struct {
	name, version string
	value         []byte // Any.value
}

type deltaResponse struct {
	typeURL, nonce string
	resources      []deltaResource
	removed        []string
}

func parseDelta(b []byte) (deltaResponse, error) {
	var r deltaResponse
	err := forEachField(b, func(num protowire.Number, val []byte) error {
		switch num {
		case 2:
			var dr deltaResource
			_ = forEachField(val, func(n protowire.Number, v []byte) error {
				switch n {
				case 1:
					dr.version = string(v)
				case 2:
					_ = forEachField(v, func(an protowire.Number, av []byte) error {
						if an == 2 {
							dr.value = av
						}
						return nil
					})
				case 3:
					dr.name = string(v)
				}
				return nil
			})
			if dr.name == "" {
				dr.name = firstString(dr.value)
			}
			r.resources = append(r.resources, dr)
		case 4:
			r.typeURL = string(val)
		case 5:
			r.nonce = string(val)
		case 6:
			r.removed = append(r.removed, string(val))
		}
		return nil
	})
	return r, err
}
