// Package matv5 reads (and, for test fixtures and interchange, writes) MATLAB Level 5 MAT-files:
// the 128-byte header, tagged data elements including the small-element form,
// zlib-compressed elements (miCOMPRESSED, MATLAB v7), and miMATRIX arrays of the numeric, logical,
// char, cell and struct classes. Sparse, object, function-handle and HDF5-based v7.3 files are
// rejected with an error. Numeric data is returned as float64 whatever its storage type (MATLAB
// stores a double array in the smallest integer type that holds its values).
//
// Reference: "MATLAB 5.0 MAT-File Format" (The MathWorks), sections 1-3 and 1-5..1-31.
package matv5

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Data types of tagged elements (mi*).
const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
	miUTF8       = 16
	miUTF16      = 17
	miUTF32      = 18
)

// Class is a MATLAB array class (mx*_CLASS).
type Class uint8

// Array classes.
const (
	Cell   Class = 1
	Struct Class = 2
	Object Class = 3
	Char   Class = 4
	Sparse Class = 5
	Double Class = 6
	Single Class = 7
	Int8   Class = 8
	Uint8  Class = 9
	Int16  Class = 10
	Uint16 Class = 11
	Int32  Class = 12
	Uint32 Class = 13
	Int64  Class = 14
	Uint64 Class = 15
)

func (c Class) String() string {
	names := map[Class]string{Cell: "cell", Struct: "struct", Object: "object", Char: "char", Sparse: "sparse",
		Double: "double", Single: "single", Int8: "int8", Uint8: "uint8", Int16: "int16", Uint16: "uint16",
		Int32: "int32", Uint32: "uint32", Int64: "int64", Uint64: "uint64"}
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// IsNumeric reports whether c is one of the numeric classes (double … uint64).
func (c Class) IsNumeric() bool { return c >= Double && c <= Uint64 }

// Array is one MATLAB array. Elements are in MATLAB's column-major order throughout.
type Array struct {
	Name    string
	Class   Class
	Dims    []int
	Complex bool
	Logical bool
	// Real and Imag hold numeric (and logical) data as float64.
	Real, Imag []float64
	// Chars holds char data (UTF-16 code units decoded to runes), column-major.
	Chars []rune
	// Cells holds the elements of a cell array.
	Cells []*Array
	// FieldNames and Fields hold a struct array: Fields[i][f] is field FieldNames[f] of element i.
	FieldNames []string
	Fields     [][]*Array
}

// Len is the number of elements (the product of Dims).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Dims {
		n *= d
	}
	return n
}

// Field returns field name of struct element i.
func (a *Array) Field(i int, name string) (*Array, error) {
	if a.Class != Struct {
		return nil, fmt.Errorf("matv5: %s is %s, not struct", a.desc(), a.Class)
	}
	if i < 0 || i >= len(a.Fields) {
		return nil, fmt.Errorf("matv5: %s: element %d out of range [0, %d)", a.desc(), i, len(a.Fields))
	}
	for f, n := range a.FieldNames {
		if n == name {
			return a.Fields[i][f], nil
		}
	}
	return nil, fmt.Errorf("matv5: %s has no field %q (fields: %s)", a.desc(), name, strings.Join(a.FieldNames, ", "))
}

// Scalar returns the single real value of a 1-element numeric or logical array.
func (a *Array) Scalar() (float64, error) {
	if a.Real == nil || len(a.Real) != 1 {
		return 0, fmt.Errorf("matv5: %s: want a numeric scalar, have %s %v", a.desc(), a.Class, a.Dims)
	}
	return a.Real[0], nil
}

// String returns a char array as text: a row vector as one string, an m×n matrix as its rows
// joined by "\n" (trailing spaces trimmed from each row).
func (a *Array) String() string {
	if a.Class != Char {
		return fmt.Sprintf("<%s %v>", a.Class, a.Dims)
	}
	rows := a.Rows()
	return strings.Join(rows, "\n")
}

// Rows returns the rows of a 2-D char array (MATLAB's char matrix of padded strings), each
// with trailing spaces trimmed (nil for non-char arrays).
func (a *Array) Rows() []string {
	if a.Class != Char || len(a.Dims) < 2 {
		return nil
	}
	m, n := a.Dims[0], a.Len()/max(a.Dims[0], 1)
	out := make([]string, m)
	for r := 0; r < m; r++ {
		rs := make([]rune, n)
		for c := 0; c < n; c++ {
			rs[c] = a.Chars[c*m+r]
		}
		out[r] = strings.TrimRight(string(rs), " ")
	}
	return out
}

func (a *Array) desc() string {
	if a.Name != "" {
		return fmt.Sprintf("%q", a.Name)
	}
	return "array"
}

// File is a decoded MAT-file.
type File struct {
	Header string // the descriptive text of the header, trimmed
	Order  binary.ByteOrder
	Vars   []*Array
}

// Var returns the top-level variable name.
func (f *File) Var(name string) (*Array, error) {
	for _, v := range f.Vars {
		if v.Name == name {
			return v, nil
		}
	}
	names := make([]string, len(f.Vars))
	for i, v := range f.Vars {
		names[i] = v.Name
	}
	return nil, fmt.Errorf("matv5: no variable %q (have %s)", name, strings.Join(names, ", "))
}

// ErrFormat wraps every decoding error; errors caused by data ending early (a truncated file)
// also wrap io.ErrUnexpectedEOF.
var ErrFormat = errors.New("matv5: bad MAT-file")

// ReadFile decodes the named file; errors name the file.
func ReadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Read decodes a MAT-file from r.
func Read(r io.Reader) (*File, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// maxInflate bounds a decompressed element (guards against corrupted size fields and zip bombs).
const maxInflate = 1 << 31

func errf(off int, format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrFormat, off, fmt.Sprintf(format, args...))
}

// errTrunc is errf for data that ends too early; it also wraps io.ErrUnexpectedEOF.
func errTrunc(off int, format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s (%w)", ErrFormat, off, fmt.Sprintf(format, args...), io.ErrUnexpectedEOF)
}

// Decode decodes a whole MAT-file held in memory.
func Decode(b []byte) (*File, error) {
	if len(b) < 128 {
		return nil, errTrunc(0, "file is %d bytes, shorter than the 128-byte header", len(b))
	}
	if strings.HasPrefix(string(b[:4]), "\x89HDF") || bytes.Contains(b[:116], []byte("MATLAB 7.3")) {
		return nil, errf(0, "MAT v7.3 (HDF5) files are not supported; save with -v7")
	}
	f := &File{Header: strings.TrimRight(string(b[:116]), " \x00")}
	switch string(b[126:128]) {
	case "IM":
		f.Order = binary.LittleEndian
	case "MI":
		f.Order = binary.BigEndian
	default:
		return nil, errf(126, "endian indicator %q, want \"IM\" or \"MI\"", b[126:128])
	}
	if v := f.Order.Uint16(b[124:]); v != 0x0100 {
		return nil, errf(124, "version %#x, want 0x0100", v)
	}
	d := &decoder{order: f.Order}
	off := 128
	for off < len(b) {
		if len(b)-off < 8 {
			// Some writers pad the end; ignore a short zero tail.
			if allZero(b[off:]) {
				break
			}
			return nil, errTrunc(off, "%d stray bytes at end of file", len(b)-off)
		}
		typ, n, data, next, err := d.tag(b, off)
		if err != nil {
			return nil, err
		}
		switch typ {
		case miCOMPRESSED:
			zr, err := zlib.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, errf(off, "compressed element of %d bytes: %v", n, err)
			}
			raw, err := io.ReadAll(io.LimitReader(zr, maxInflate))
			if err != nil {
				return nil, errTrunc(off, "inflating element of %d bytes: %v", n, err)
			}
			// The inflated bytes hold exactly one tagged element (normally miMATRIX).
			it, _, idata, _, err := d.tag(raw, 0)
			if err != nil {
				return nil, fmt.Errorf("inside compressed element at byte %d: %w", off, err)
			}
			if it != miMATRIX {
				return nil, errf(off, "compressed element holds type %d, want miMATRIX (14)", it)
			}
			a, err := d.matrix(idata, 0)
			if err != nil {
				return nil, fmt.Errorf("inside compressed element at byte %d: %w", off, err)
			}
			f.Vars = append(f.Vars, a)
		case miMATRIX:
			a, err := d.matrix(data, off+8)
			if err != nil {
				return nil, err
			}
			f.Vars = append(f.Vars, a)
		default:
			return nil, errf(off, "top-level element of type %d, want miMATRIX (14) or miCOMPRESSED (15)", typ)
		}
		off = next
	}
	return f, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

type decoder struct {
	order binary.ByteOrder
}

// tag parses the data element at b[off:], returning its type, byte count, data and the offset of
// the next element (8-byte aligned, except after compressed elements, which are not padded).
func (d *decoder) tag(b []byte, off int) (typ uint32, n int, data []byte, next int, err error) {
	if len(b)-off < 8 {
		return 0, 0, nil, 0, errTrunc(off, "truncated element tag (%d bytes left)", len(b)-off)
	}
	w := d.order.Uint32(b[off:])
	if w>>16 != 0 { // small data element: 2-byte size, 2-byte type, up to 4 data bytes
		typ, n = w&0xffff, int(w>>16)
		if n > 4 {
			return 0, 0, nil, 0, errf(off, "small element claims %d bytes (max 4)", n)
		}
		return typ, n, b[off+4 : off+4+n], off + 8, nil
	}
	typ = w
	n64 := uint64(d.order.Uint32(b[off+4:]))
	if n64 > uint64(len(b)-off-8) {
		return 0, 0, nil, 0, errTrunc(off, "element of type %d claims %d bytes but only %d remain", typ, n64, len(b)-off-8)
	}
	n = int(n64)
	data = b[off+8 : off+8+n]
	next = off + 8 + n
	if typ != miCOMPRESSED {
		next = off + 8 + (n+7)/8*8
		if next > len(b) {
			next = len(b) // tolerate missing final padding
		}
	}
	return typ, n, data, next, nil
}

// matrix decodes the body of a miMATRIX element; base is its absolute offset for messages.
func (d *decoder) matrix(b []byte, base int) (*Array, error) {
	if len(b) == 0 { // empty array, e.g. an empty cell element
		return &Array{Class: Double, Dims: []int{0, 0}}, nil
	}
	// Array flags.
	typ, n, flags, off, err := d.tag(b, 0)
	if err != nil {
		return nil, err
	}
	if typ != miUINT32 || n != 8 {
		return nil, errf(base, "array flags: type %d size %d, want miUINT32 of 8 bytes", typ, n)
	}
	fw := d.order.Uint32(flags)
	a := &Array{Class: Class(fw & 0xff), Complex: fw&0x800 != 0, Logical: fw&0x200 != 0}
	switch a.Class {
	case Sparse, Object:
		return nil, errf(base, "%s arrays are not supported", a.Class)
	case Cell, Struct, Char:
	default:
		if !a.Class.IsNumeric() {
			return nil, errf(base, "unknown array class %d", uint8(a.Class))
		}
	}
	// Dimensions.
	typ, _, dims, off2, err := d.tag(b, off)
	if err != nil {
		return nil, err
	}
	if typ != miINT32 || len(dims)%4 != 0 || len(dims) < 8 {
		return nil, errf(base+off, "dimensions: type %d with %d bytes, want ≥ 2 miINT32", typ, len(dims))
	}
	total := 1
	for i := 0; i < len(dims); i += 4 {
		v := int32(d.order.Uint32(dims[i:]))
		if v < 0 {
			return nil, errf(base+off, "negative dimension %d", v)
		}
		a.Dims = append(a.Dims, int(v))
		total *= int(v)
		if total > len(b) && total > 1<<24 { // every stored element takes at least one byte
			return nil, errf(base+off, "dimensions %v are implausible for a %d-byte element", a.Dims, len(b))
		}
	}
	off = off2
	// Name.
	var name []byte
	typ, _, name, off, err = d.tag(b, off)
	if err != nil {
		return nil, err
	}
	if typ != miINT8 && typ != miUTF8 {
		return nil, errf(base, "array name: type %d, want miINT8", typ)
	}
	a.Name = string(name)
	switch a.Class {
	case Cell:
		if total*8 > len(b) {
			return nil, errf(base, "cell %s: %d elements cannot fit in %d bytes", a.desc(), total, len(b))
		}
		a.Cells = make([]*Array, total)
		for i := range a.Cells {
			typ, _, data, next, err := d.tag(b, off)
			if err != nil {
				return nil, fmt.Errorf("cell %s element %d: %w", a.desc(), i, err)
			}
			if typ != miMATRIX {
				return nil, errf(base+off, "cell %s element %d: type %d, want miMATRIX", a.desc(), i, typ)
			}
			if a.Cells[i], err = d.matrix(data, base+off+8); err != nil {
				return nil, fmt.Errorf("cell %s element %d: %w", a.desc(), i, err)
			}
			off = next
		}
	case Struct:
		typ, _, fl, next, err := d.tag(b, off)
		if err != nil {
			return nil, err
		}
		if typ != miINT32 || len(fl) != 4 {
			return nil, errf(base+off, "struct %s: field-name length: type %d, want one miINT32", a.desc(), typ)
		}
		flen := int(d.order.Uint32(fl))
		off = next
		typ, _, names, next, err := d.tag(b, off)
		if err != nil {
			return nil, err
		}
		if typ != miINT8 || flen <= 0 || len(names)%flen != 0 {
			return nil, errf(base+off, "struct %s: field names: type %d, %d bytes for length %d", a.desc(), typ, len(names), flen)
		}
		for i := 0; i < len(names); i += flen {
			a.FieldNames = append(a.FieldNames, strings.TrimRight(string(names[i:i+flen]), "\x00"))
		}
		off = next
		if total*len(a.FieldNames)*8 > len(b) {
			return nil, errf(base, "struct %s: %d elements × %d fields cannot fit in %d bytes", a.desc(), total, len(a.FieldNames), len(b))
		}
		a.Fields = make([][]*Array, total)
		for i := range a.Fields {
			a.Fields[i] = make([]*Array, len(a.FieldNames))
			for fi, fname := range a.FieldNames {
				typ, _, data, next, err := d.tag(b, off)
				if err != nil {
					return nil, fmt.Errorf("struct %s element %d field %s: %w", a.desc(), i, fname, err)
				}
				if typ != miMATRIX {
					return nil, errf(base+off, "struct %s element %d field %s: type %d, want miMATRIX", a.desc(), i, fname, typ)
				}
				v, err := d.matrix(data, base+off+8)
				if err != nil {
					return nil, fmt.Errorf("struct %s element %d field %s: %w", a.desc(), i, fname, err)
				}
				v.Name = fname
				a.Fields[i][fi] = v
				off = next
			}
		}
	case Char:
		typ, _, data, _, err := d.tag(b, off)
		if err != nil {
			return nil, err
		}
		rs, err := d.chars(typ, data)
		if err != nil {
			return nil, errf(base+off, "char %s: %v", a.desc(), err)
		}
		if len(rs) != total {
			return nil, errf(base+off, "char %s: %d characters for dimensions %v", a.desc(), len(rs), a.Dims)
		}
		a.Chars = rs
	default:
		typ, _, data, next, err := d.tag(b, off)
		if err != nil {
			return nil, err
		}
		if a.Real, err = d.numbers(typ, data); err != nil {
			return nil, errf(base+off, "%s: real part: %v", a.desc(), err)
		}
		if len(a.Real) != total {
			return nil, errf(base+off, "%s: %d values for dimensions %v", a.desc(), len(a.Real), a.Dims)
		}
		if a.Complex {
			typ, _, data, _, err := d.tag(b, next)
			if err != nil {
				return nil, err
			}
			if a.Imag, err = d.numbers(typ, data); err != nil || len(a.Imag) != total {
				return nil, errf(base+next, "%s: imaginary part: %d values, %v", a.desc(), len(a.Imag), err)
			}
		}
	}
	return a, nil
}

// numbers converts numeric element data of any mi type to float64.
func (d *decoder) numbers(typ uint32, b []byte) ([]float64, error) {
	size := map[uint32]int{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4,
		miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[typ]
	if size == 0 {
		return nil, fmt.Errorf("data type %d is not numeric", typ)
	}
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d bytes is not a multiple of the %d-byte type %d", len(b), size, typ)
	}
	out := make([]float64, len(b)/size)
	o := d.order
	for i := range out {
		p := b[i*size:]
		switch typ {
		case miINT8:
			out[i] = float64(int8(p[0]))
		case miUINT8:
			out[i] = float64(p[0])
		case miINT16:
			out[i] = float64(int16(o.Uint16(p)))
		case miUINT16:
			out[i] = float64(o.Uint16(p))
		case miINT32:
			out[i] = float64(int32(o.Uint32(p)))
		case miUINT32:
			out[i] = float64(o.Uint32(p))
		case miSINGLE:
			out[i] = float64(math.Float32frombits(o.Uint32(p)))
		case miDOUBLE:
			out[i] = math.Float64frombits(o.Uint64(p))
		case miINT64:
			out[i] = float64(int64(o.Uint64(p)))
		case miUINT64:
			out[i] = float64(o.Uint64(p))
		}
	}
	return out, nil
}

// chars decodes char data stored as miUINT16/miUTF16 (UTF-16 code units), miUINT8/miINT8/miUTF8
// or miUTF32.
func (d *decoder) chars(typ uint32, b []byte) ([]rune, error) {
	switch typ {
	case miUINT16, miUTF16:
		if len(b)%2 != 0 {
			return nil, fmt.Errorf("odd byte count %d for UTF-16 data", len(b))
		}
		u := make([]uint16, len(b)/2)
		for i := range u {
			u[i] = d.order.Uint16(b[2*i:])
		}
		// MATLAB stores one UTF-16 code unit per element, so units map to runes one to one and
		// the count matches the dimensions (characters outside the BMP stay as surrogates).
		rs := make([]rune, len(u))
		for i, c := range u {
			rs[i] = rune(c)
		}
		return rs, nil
	case miUINT8, miINT8:
		rs := make([]rune, len(b))
		for i, c := range b {
			rs[i] = rune(c)
		}
		return rs, nil
	case miUTF8:
		return []rune(string(b)), nil
	case miUTF32:
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("byte count %d not a multiple of 4 for UTF-32", len(b))
		}
		rs := make([]rune, len(b)/4)
		for i := range rs {
			rs[i] = rune(d.order.Uint32(b[4*i:]))
		}
		return rs, nil
	}
	return nil, fmt.Errorf("data type %d is not a character type", typ)
}
