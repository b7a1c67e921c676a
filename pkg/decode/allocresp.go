package decode

import (
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The device manager's restore unmarshals every entry's AllocResp, the device plugin's
// ContainerAllocateResponse as protobuf bytes, and drops the entries it cannot unmarshal
// (pod_devices.go fromCheckpointData). Which bytes it refuses is the generated code of the
// release's k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1: gogo-generated Unmarshal methods until
// 1.33, google.golang.org/protobuf from 1.34. This file replays both on the bytes only: it
// walks them, builds nothing, and keeps O(1) state whatever the input (the file size cap bounds
// the time). docs/restore-checks.md has the source lines.

// protoKind is the type of a field of the device plugin messages.
type protoKind int

const (
	protoString protoKind = iota
	protoBool
	protoMessage
	protoStringMap // map<string, string>
)

// protoField is one field of a message: its number, its Go name (gogo's errors name it) and type.
type protoField struct {
	Num  int32
	Name string
	Kind protoKind
	Msg  *protoMsg // protoMessage fields
}

// protoMsg is a message of the device plugin API as one era's api.proto declares it.
type protoMsg struct {
	Name   string
	Fields []protoField
}

func (m *protoMsg) field(num int32) *protoField {
	for i := range m.Fields {
		if m.Fields[i].Num == num {
			return &m.Fields[i]
		}
	}
	return nil
}

// The messages of deviceplugin/v1beta1 under ContainerAllocateResponse.
var (
	pbMount = &protoMsg{Name: "Mount", Fields: []protoField{
		{1, "ContainerPath", protoString, nil}, {2, "HostPath", protoString, nil}, {3, "ReadOnly", protoBool, nil}}}
	pbDeviceSpec = &protoMsg{Name: "DeviceSpec", Fields: []protoField{
		{1, "ContainerPath", protoString, nil}, {2, "HostPath", protoString, nil}, {3, "Permissions", protoString, nil}}}
	pbCDIDevice = &protoMsg{Name: "CDIDevice", Fields: []protoField{{1, "Name", protoString, nil}}}

	// allocRespV1beta1 is ContainerAllocateResponse as 1.11-1.27 declare it.
	allocRespV1beta1 = &protoMsg{Name: "ContainerAllocateResponse", Fields: []protoField{
		{1, "Envs", protoStringMap, nil}, {2, "Mounts", protoMessage, pbMount},
		{3, "Devices", protoMessage, pbDeviceSpec}, {4, "Annotations", protoStringMap, nil}}}
	// allocRespCDI adds cdi_devices = 5 (1.28+).
	allocRespCDI = &protoMsg{Name: "ContainerAllocateResponse", Fields: append(append([]protoField(nil), allocRespV1beta1.Fields...),
		protoField{5, "CDIDevices", protoMessage, pbCDIDevice})}
)

// protoLib is the code that parses the bytes: which generator made the Unmarshal methods.
type protoLib int

const (
	// gogoRecursiveSkip: gogo/protobuf 1.2 generated code; its skipApi returns a lone end-group
	// tag as a field of its own (1.17).
	gogoRecursiveSkip protoLib = iota
	// gogoDepthSkip: gogo/protobuf 1.3 generated code; skipApi counts group depth and refuses a
	// lone end-group tag (1.18-1.33).
	gogoDepthSkip
	// googleProtobuf: protoc-gen-go code run by google.golang.org/protobuf's proto.Unmarshal
	// (1.34+): proto3 strings must be UTF-8, a known field with another wire type is kept as
	// an unknown one, field numbers above 2^29-1 are refused.
	googleProtobuf
)

// allocRespRule is how one era's kubelet unmarshals an AllocResp.
type allocRespRule struct {
	Lib    protoLib
	Schema *protoMsg
	// MapSkipUnchecked: code generated before gogo/protobuf 1.3.2 (CVE-2021-3121) does not check
	// in map entries that a skipped field's end fits in an int: the index wraps negative, and
	// the next read panics.
	MapSkipUnchecked bool
}

// unmarshal returns the error that era's Unmarshal returns for b, word for word (nil: accepted).
func (r allocRespRule) unmarshal(b []byte) error {
	if r.Lib == googleProtobuf {
		return googleUnmarshal(b, r.Schema, protowire.DefaultRecursionLimit)
	}
	return r.gogoUnmarshal(b, r.Schema)
}

// gogo's errors (api.pb.go's ErrInvalidLengthApi, ErrIntOverflowApi, ErrUnexpectedEndOfGroupApi;
// io.ErrUnexpectedEOF is returned as is).
var (
	errGogoInvalidLength = errors.New("proto: negative length found during unmarshaling")
	errGogoIntOverflow   = errors.New("proto: integer overflow")
	errGogoEndOfGroup    = errors.New("proto: unexpected end of group")
)

// gogoVarint is the generated varint loop: at most ten bytes, the bits past 64 dropped, the
// end checked against l (which is not always len(b): map entries check the whole message's).
func gogoVarint(b []byte, i, l int) (uint64, int, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, i, errGogoIntOverflow
		}
		if i >= l {
			return 0, i, io.ErrUnexpectedEOF
		}
		c := b[i]
		i++
		v |= uint64(c&0x7F) << shift
		if c < 0x80 {
			return v, i, nil
		}
	}
}

// gogoLength reads a length and returns where the value it announces starts and ends, checked
// as the generated code checks it (the value's end against l).
func gogoLength(b []byte, i, l int) (int, int, error) {
	v, i, err := gogoVarint(b, i, l)
	if err != nil {
		return 0, 0, err
	}
	n := int(v)
	if n < 0 {
		return 0, 0, errGogoInvalidLength
	}
	end := i + n
	if end < 0 {
		return 0, 0, errGogoInvalidLength
	}
	if end > l {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return i, end, nil
}

// gogoUnmarshal is the generated (m *Msg) Unmarshal(dAtA) of m, checks only.
func (r allocRespRule) gogoUnmarshal(b []byte, m *protoMsg) error {
	l := len(b)
	i := 0
	for i < l {
		pre := i
		wire, next, err := gogoVarint(b, i, l)
		if err != nil {
			return err
		}
		i = next
		num, wt := int32(wire>>3), int(wire&7)
		if wt == 4 {
			return fmt.Errorf("proto: %s: wiretype end group for non-group", m.Name)
		}
		if num <= 0 {
			return fmt.Errorf("proto: %s: illegal tag %d (wire type %d)", m.Name, num, wire)
		}
		f := m.field(num)
		if f == nil {
			skippy, err := gogoSkip(b[pre:], r.Lib)
			if err != nil {
				return err
			}
			if skippy < 0 || pre+skippy < 0 {
				return errGogoInvalidLength
			}
			if pre+skippy > l {
				return io.ErrUnexpectedEOF
			}
			i = pre + skippy
			continue
		}
		want := 2
		if f.Kind == protoBool {
			want = 0
		}
		if wt != want {
			return fmt.Errorf("proto: wrong wireType = %d for field %s", wt, f.Name)
		}
		switch f.Kind {
		case protoBool:
			if _, i, err = gogoVarint(b, i, l); err != nil {
				return err
			}
		case protoString:
			if _, i, err = gogoLength(b, i, l); err != nil {
				return err
			}
		case protoMessage:
			start, end, err := gogoLength(b, i, l)
			if err != nil {
				return err
			}
			if err := r.gogoUnmarshal(b[start:end], f.Msg); err != nil {
				return err
			}
			i = end
		case protoStringMap:
			start, end, err := gogoLength(b, i, l)
			if err != nil {
				return err
			}
			if err := r.gogoMapEntry(b, start, end, l); err != nil {
				return err
			}
			i = end
		}
	}
	if i > l {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// gogoMapEntry is the generated loop over one map<string, string> entry in b[i:end]. Its reads
// are checked against l, the whole message's end, not the entry's; fields 1 and 2 are read as
// strings whatever their wire type; anything else is skipped and must end within the entry.
func (r allocRespRule) gogoMapEntry(b []byte, i, end, l int) error {
	for i < end {
		pre := i
		wire, next, err := gogoVarint(b, i, l)
		if err != nil {
			return err
		}
		i = next
		if num := int32(wire >> 3); num == 1 || num == 2 {
			if _, i, err = gogoLength(b, i, l); err != nil {
				return err
			}
			continue
		}
		skippy, err := gogoSkip(b[pre:], r.Lib)
		if err != nil {
			return err
		}
		if pre+skippy < 0 && r.MapSkipUnchecked {
			// Only skippy < 0 is checked: the wrapped index passes the end check, and the
			// entry's loop reads at it.
			return allocRespPanic{index: pre + skippy}
		}
		if skippy < 0 || pre+skippy < 0 {
			return errGogoInvalidLength
		}
		if pre+skippy > end {
			return io.ErrUnexpectedEOF
		}
		i = pre + skippy
	}
	return nil
}

// allocRespPanic is the generated code's panic, which the restore does not recover: the
// kubelet crashes (devRestore.check).
type allocRespPanic struct{ index int }

func (p allocRespPanic) Error() string {
	return fmt.Sprintf("panic: runtime error: index out of range [%d]", p.index)
}

// gogoSkip is the generated skipApi: the length of the field starting at b[0], tag included.
// Groups are counted with a depth (1.2's code recursed, with the same result), so nothing grows
// with the input.
func gogoSkip(b []byte, lib protoLib) (int, error) {
	l := len(b)
	i := 0
	depth := 0
	for i < l {
		wire, next, err := gogoVarint(b, i, l)
		if err != nil {
			return 0, err
		}
		i = next
		switch wt := int(wire & 7); wt {
		case 0:
			for shift := uint(0); ; shift += 7 {
				if shift >= 64 {
					return 0, errGogoIntOverflow
				}
				if i >= l {
					return 0, io.ErrUnexpectedEOF
				}
				i++
				if b[i-1] < 0x80 {
					break
				}
			}
		case 1:
			i += 8
		case 2:
			v, next, err := gogoVarint(b, i, l)
			if err != nil {
				return 0, err
			}
			n := int(v)
			if n < 0 {
				return 0, errGogoInvalidLength
			}
			i = next + n
		case 3:
			depth++
		case 4:
			if depth == 0 {
				if lib == gogoRecursiveSkip {
					return i, nil // 1.2: a lone end group is a field of its own
				}
				return 0, errGogoEndOfGroup
			}
			depth--
		case 5:
			i += 4
		default:
			return 0, fmt.Errorf("proto: illegal wireType %d", wt)
		}
		if i < 0 {
			return 0, errGogoInvalidLength
		}
		if depth == 0 {
			return i, nil
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// google.golang.org/protobuf's errors as proto.Unmarshal returns them.
var (
	errPBDecode         = errors.New("proto: cannot parse invalid wire-format data")
	errPBInvalidUTF8    = errors.New("string field contains invalid UTF-8")
	errPBRecursionDepth = errors.New("proto: exceeded maximum recursion depth")
)

// googleUnmarshal is internal/impl's unmarshalPointer (with the codecs of the message's fields)
// on m, checks only; depth is the recursion budget left (proto.Unmarshal starts at 10000).
func googleUnmarshal(b []byte, m *protoMsg, depth int) error {
	if depth--; depth < 0 {
		return errPBRecursionDepth
	}
	for len(b) > 0 {
		tag, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return errPBDecode
		}
		b = b[n:]
		if num := tag >> 3; num < uint64(protowire.MinValidNumber) || num > uint64(protowire.MaxValidNumber) {
			return errPBDecode
		}
		num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
		if wt == protowire.EndGroupType {
			return errPBDecode // not in a group
		}
		n, err := googleField(b, m.field(int32(num)), wt, depth)
		if err == errUnknownField {
			if n = protowire.ConsumeFieldValue(num, wt, b); n < 0 {
				return errPBDecode
			}
		} else if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// errUnknownField: the field is not in the schema or has another wire type; it is kept as an
// unknown field, which only has to be well formed.
var errUnknownField = errors.New("unknown field")

// googleField consumes one known field's value (the codecs' consume functions).
func googleField(b []byte, f *protoField, wt protowire.Type, depth int) (int, error) {
	if f == nil {
		return 0, errUnknownField
	}
	if f.Kind == protoStringMap {
		// consumeMap spends a level of recursion before looking at the wire type.
		if depth-1 < 0 {
			return 0, errPBRecursionDepth
		}
	}
	want := protowire.BytesType
	if f.Kind == protoBool {
		want = protowire.VarintType
	}
	if wt != want {
		return 0, errUnknownField
	}
	if f.Kind == protoBool {
		_, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, errPBDecode
		}
		return n, nil
	}
	v, n := protowire.ConsumeBytes(b)
	if n < 0 {
		return 0, errPBDecode
	}
	switch f.Kind {
	case protoString:
		if !utf8.Valid(v) {
			return 0, errPBInvalidUTF8
		}
	case protoMessage:
		if err := googleUnmarshal(v, f.Msg, depth); err != nil {
			return 0, err
		}
	case protoStringMap:
		if err := googleMapEntry(v); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// googleMapEntry is consumeMap's loop over one entry: key and value are UTF-8 strings; other
// fields, and a key or value of another wire type, are skipped.
func googleMapEntry(b []byte) error {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return errPBDecode
		}
		b = b[n:]
		if (num == 1 || num == 2) && wt == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errPBDecode
			}
			if !utf8.Valid(v) {
				return errPBInvalidUTF8
			}
			b = b[n:]
			continue
		}
		if n = protowire.ConsumeFieldValue(num, wt, b); n < 0 {
			return errPBDecode
		}
		b = b[n:]
	}
	return nil
}
