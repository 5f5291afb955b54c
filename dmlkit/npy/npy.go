// Package npy reads and writes NumPy .npy files (format versions 1.0, 2.0 and 3.0) holding
// embeddings and labels, so Python users can hand dmlkit their embeddings and take ours.
//
// Supported dtypes: float32 ('<f4'), float64 ('<f8'), int32 ('<i4'), int64 ('<i8'), in little- or
// big-endian byte order, C order (row-major); for masks and labels also bool ('|b1', read as 0/1),
// uint8 ('|u1') and int8 ('|i1'), which are returned as int32 data. Fortran-ordered arrays are rejected with an error
// (save them with np.ascontiguousarray first). Files are always written as version 1.0 (or 2.0
// when the header does not fit), little-endian, C order.
package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

var magic = []byte("\x93NUMPY")

// Array is a decoded .npy array: exactly one of F32, F64, I32, I64 is non-nil.
type Array struct {
	Shape []int
	DType string // "float32", "float64", "int32" or "int64"
	F32   []float32
	F64   []float64
	I32   []int32
	I64   []int64
}

// Len returns the number of elements.
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// Float64 returns the data converted to float64 (integers are converted exactly up to 2^53).
func (a *Array) Float64() []float64 {
	out := make([]float64, a.Len())
	switch {
	case a.F64 != nil:
		copy(out, a.F64)
	case a.F32 != nil:
		for i, v := range a.F32 {
			out[i] = float64(v)
		}
	case a.I32 != nil:
		for i, v := range a.I32 {
			out[i] = float64(v)
		}
	case a.I64 != nil:
		for i, v := range a.I64 {
			out[i] = float64(v)
		}
	}
	return out
}

// Float32 returns the data converted to float32.
func (a *Array) Float32() []float32 {
	if a.F32 != nil {
		return append([]float32(nil), a.F32...)
	}
	f := a.Float64()
	out := make([]float32, len(f))
	for i, v := range f {
		out[i] = float32(v)
	}
	return out
}

// Read decodes the .npy file at path.
func Read(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	a, err := Decode(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("npy: %s: %w", path, err)
	}
	return a, nil
}

var (
	reDescr   = regexp.MustCompile(`'descr'\s*:\s*'([^']*)'`)
	reFortran = regexp.MustCompile(`'fortran_order'\s*:\s*(True|False)`)
	reShape   = regexp.MustCompile(`'shape'\s*:\s*\(([^)]*)\)`)
)

// Decode reads one .npy array from r.
func Decode(r io.Reader) (*Array, error) {
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return nil, fmt.Errorf("not a .npy file: %d-byte preamble missing", len(pre))
	}
	if !bytes.Equal(pre[:6], magic) {
		return nil, fmt.Errorf("not a .npy file: bad magic %q", pre[:6])
	}
	major := pre[6]
	var hlen int
	switch major {
	case 1:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("truncated header length")
		}
		hlen = int(binary.LittleEndian.Uint16(b))
	case 2, 3:
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("truncated header length")
		}
		hlen = int(binary.LittleEndian.Uint32(b))
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d", pre[6], pre[7])
	}
	if hlen > 1<<20 {
		return nil, fmt.Errorf("header length %d is implausible", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return nil, fmt.Errorf("truncated header (want %d bytes)", hlen)
	}
	h := string(hb)
	m := reDescr.FindStringSubmatch(h)
	if m == nil {
		return nil, fmt.Errorf("header has no 'descr': %q", strings.TrimSpace(h))
	}
	descr := m[1]
	if fm := reFortran.FindStringSubmatch(h); fm == nil {
		return nil, fmt.Errorf("header has no 'fortran_order': %q", strings.TrimSpace(h))
	} else if fm[1] == "True" {
		return nil, fmt.Errorf("Fortran-ordered arrays are not supported; save with np.ascontiguousarray")
	}
	sm := reShape.FindStringSubmatch(h)
	if sm == nil {
		return nil, fmt.Errorf("header has no 'shape': %q", strings.TrimSpace(h))
	}
	a := &Array{}
	n := 1
	for _, s := range strings.Split(sm[1], ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		d, err := strconv.Atoi(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad shape entry %q", s)
		}
		a.Shape = append(a.Shape, d)
		n *= d
	}
	if len(descr) < 3 {
		return nil, fmt.Errorf("unsupported dtype %q", descr)
	}
	var order binary.ByteOrder
	switch descr[0] {
	case '<', '|', '=':
		order = binary.LittleEndian
	case '>':
		order = binary.BigEndian
	default:
		return nil, fmt.Errorf("unsupported dtype %q", descr)
	}
	kind := descr[1:]
	size := map[string]int{"f4": 4, "f8": 8, "i4": 4, "i8": 8, "b1": 1, "u1": 1, "i1": 1}[kind]
	if size == 0 {
		return nil, fmt.Errorf("unsupported dtype %q (want float32, float64, int32, int64, bool, uint8 or int8)", descr)
	}
	raw := make([]byte, n*size)
	if got, err := io.ReadFull(r, raw); err != nil {
		return nil, fmt.Errorf("truncated data: %d of %d bytes for shape %v", got, len(raw), a.Shape)
	}
	switch kind {
	case "f4":
		a.DType, a.F32 = "float32", make([]float32, n)
		for i := range a.F32 {
			a.F32[i] = math.Float32frombits(order.Uint32(raw[4*i:]))
		}
	case "f8":
		a.DType, a.F64 = "float64", make([]float64, n)
		for i := range a.F64 {
			a.F64[i] = math.Float64frombits(order.Uint64(raw[8*i:]))
		}
	case "i4":
		a.DType, a.I32 = "int32", make([]int32, n)
		for i := range a.I32 {
			a.I32[i] = int32(order.Uint32(raw[4*i:]))
		}
	case "i8":
		a.DType, a.I64 = "int64", make([]int64, n)
		for i := range a.I64 {
			a.I64[i] = int64(order.Uint64(raw[8*i:]))
		}
	case "b1", "u1", "i1":
		a.DType, a.I32 = map[string]string{"b1": "bool", "u1": "uint8", "i1": "int8"}[kind], make([]int32, n)
		for i, b := range raw {
			switch kind {
			case "b1":
				if b != 0 {
					a.I32[i] = 1
				}
			case "u1":
				a.I32[i] = int32(b)
			default:
				a.I32[i] = int32(int8(b))
			}
		}
	}
	return a, nil
}

// ReadFloat32 reads a float32 or float64 array (converted to float32) and its shape. Integer files
// are rejected: embeddings stored as integers are almost always a mix-up of files.
func ReadFloat32(path string) ([]float32, []int, error) {
	a, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	if a.F32 == nil && a.F64 == nil {
		return nil, nil, fmt.Errorf("npy: %s: dtype %s, want float32 or float64 embeddings", path, a.DType)
	}
	return a.Float32(), a.Shape, nil
}

// ReadFloat64 reads a float32 or float64 array (converted to float64) and its shape.
func ReadFloat64(path string) ([]float64, []int, error) {
	a, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	if a.F32 == nil && a.F64 == nil {
		return nil, nil, fmt.Errorf("npy: %s: dtype %s, want float32 or float64", path, a.DType)
	}
	return a.Float64(), a.Shape, nil
}

// ReadInt64 reads an integer or boolean array (converted to int64) and its shape. Float files are
// rejected with an error naming the dtype: labels stored as floats are a common mistake.
func ReadInt64(path string) ([]int64, []int, error) {
	a, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case a.I64 != nil:
		return a.I64, a.Shape, nil
	case a.I32 != nil:
		out := make([]int64, len(a.I32))
		for i, v := range a.I32 {
			out[i] = int64(v)
		}
		return out, a.Shape, nil
	}
	return nil, nil, fmt.Errorf("npy: %s: dtype %s, want int32 or int64 labels (convert with y.astype(np.int64))", path, a.DType)
}

// Write stores data ([]float32, []float64, []int32 or []int64) with the given shape (default: 1-D)
// at path. A regular file (or a new path) is written to a temporary name and renamed, so readers
// never see a partial file; a device or pipe (/dev/stdout, a FIFO) is written directly and its
// write error returned ([atomicfile.WriteFile]).
func Write(path string, data any, shape ...int) error {
	var buf bytes.Buffer
	if err := Encode(&buf, data, shape...); err != nil {
		return fmt.Errorf("npy: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	return nil
}

// Encode writes data as a .npy stream (see [Write]).
func Encode(w io.Writer, data any, shape ...int) error {
	var descr string
	var n int
	switch d := data.(type) {
	case []float32:
		descr, n = "<f4", len(d)
	case []float64:
		descr, n = "<f8", len(d)
	case []int32:
		descr, n = "<i4", len(d)
	case []int64:
		descr, n = "<i8", len(d)
	default:
		return fmt.Errorf("unsupported data type %T (want []float32, []float64, []int32 or []int64)", data)
	}
	if len(shape) == 0 {
		shape = []int{n}
	}
	total := 1
	parts := make([]string, len(shape))
	for i, s := range shape {
		if s < 0 {
			return fmt.Errorf("negative dimension in shape %v", shape)
		}
		total *= s
		parts[i] = strconv.Itoa(s)
	}
	if total != n {
		return fmt.Errorf("shape %v holds %d elements, data has %d", shape, total, n)
	}
	shapeStr := strings.Join(parts, ", ")
	if len(shape) == 1 {
		shapeStr += ","
	}
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shapeStr)
	// Pad with spaces so that preamble + header + '\n' is a multiple of 64 bytes.
	version, lenBytes := byte(1), 2
	if len(header)+1+10 > 65535 {
		version, lenBytes = 2, 4
	}
	pre := 6 + 2 + lenBytes
	pad := (64 - (pre+len(header)+1)%64) % 64
	header += strings.Repeat(" ", pad) + "\n"
	out := append([]byte{}, magic...)
	out = append(out, version, 0)
	if lenBytes == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(header)))
	}
	out = append(out, header...)
	if _, err := w.Write(out); err != nil {
		return err
	}
	return binary.Write(w, binary.LittleEndian, data)
}
