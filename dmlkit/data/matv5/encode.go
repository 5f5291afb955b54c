package matv5

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// Encode writes a little-endian Level 5 MAT-file holding vars. With compress, each variable is
// wrapped in a zlib miCOMPRESSED element, as MATLAB's default -v7 format does. Like MATLAB, real
// double arrays whose values are all integers are stored in the smallest integer type that holds
// them (uint8, int16, …), and tags of ≤ 4 data bytes use the small-element form. Char arrays are
// written as miUINT16. Supported classes: numeric, logical, char, cell, struct.
func Encode(w io.Writer, vars []*Array, compress bool) error {
	hdr := make([]byte, 128)
	copy(hdr, fmt.Sprintf("%-116s", "MATLAB 5.0 MAT-file, Platform: GLNXA64, Created by: dmlkit matv5"))
	for i := 116; i < 124; i++ {
		hdr[i] = ' '
	}
	binary.LittleEndian.PutUint16(hdr[124:], 0x0100)
	copy(hdr[126:], "IM")
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	for _, v := range vars {
		var body bytes.Buffer
		if err := writeMatrix(&body, v, v.Name); err != nil {
			return err
		}
		if !compress {
			if _, err := w.Write(body.Bytes()); err != nil {
				return err
			}
			continue
		}
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write(body.Bytes())
		if err := zw.Close(); err != nil {
			return err
		}
		tag := make([]byte, 8)
		binary.LittleEndian.PutUint32(tag, miCOMPRESSED)
		binary.LittleEndian.PutUint32(tag[4:], uint32(z.Len()))
		if _, err := w.Write(append(tag, z.Bytes()...)); err != nil {
			return err
		}
	}
	return nil
}

// writeElem writes one tagged element (small form when ≤ 4 bytes), padded to 8 bytes.
func writeElem(w *bytes.Buffer, typ uint32, data []byte) {
	if len(data) <= 4 && typ != miMATRIX {
		binary.Write(w, binary.LittleEndian, uint32(len(data))<<16|typ)
		pad := make([]byte, 4)
		copy(pad, data)
		w.Write(pad)
		return
	}
	binary.Write(w, binary.LittleEndian, typ)
	binary.Write(w, binary.LittleEndian, uint32(len(data)))
	w.Write(data)
	if r := len(data) % 8; r != 0 {
		w.Write(make([]byte, 8-r))
	}
}

func writeMatrix(w *bytes.Buffer, a *Array, name string) error {
	var b bytes.Buffer
	flags := uint32(a.Class)
	if a.Complex {
		flags |= 0x800
	}
	if a.Logical {
		flags |= 0x200
	}
	fl := make([]byte, 8)
	binary.LittleEndian.PutUint32(fl, flags)
	writeElem(&b, miUINT32, fl)
	var dims []byte
	for _, d := range a.Dims {
		dims = binary.LittleEndian.AppendUint32(dims, uint32(d))
	}
	writeElem(&b, miINT32, dims)
	writeElem(&b, miINT8, []byte(name))
	n := a.Len()
	switch {
	case a.Class == Cell:
		if len(a.Cells) != n {
			return fmt.Errorf("matv5: encode %q: %d cells for dims %v", name, len(a.Cells), a.Dims)
		}
		for _, c := range a.Cells {
			if err := writeMatrix(&b, c, ""); err != nil {
				return err
			}
		}
	case a.Class == Struct:
		if len(a.Fields) != n {
			return fmt.Errorf("matv5: encode %q: %d struct elements for dims %v", name, len(a.Fields), a.Dims)
		}
		flen := 1
		for _, f := range a.FieldNames {
			flen = max(flen, len(f)+1)
		}
		writeElem(&b, miINT32, binary.LittleEndian.AppendUint32(nil, uint32(flen)))
		names := make([]byte, flen*len(a.FieldNames))
		for i, f := range a.FieldNames {
			copy(names[i*flen:], f)
		}
		writeElem(&b, miINT8, names)
		for i := range a.Fields {
			for f := range a.FieldNames {
				if err := writeMatrix(&b, a.Fields[i][f], ""); err != nil {
					return err
				}
			}
		}
	case a.Class == Char:
		if len(a.Chars) != n {
			return fmt.Errorf("matv5: encode %q: %d chars for dims %v", name, len(a.Chars), a.Dims)
		}
		var data []byte
		for _, r := range a.Chars {
			data = binary.LittleEndian.AppendUint16(data, uint16(r))
		}
		writeElem(&b, miUINT16, data)
	case a.Class.IsNumeric():
		if len(a.Real) != n || a.Complex && len(a.Imag) != n {
			return fmt.Errorf("matv5: encode %q: %d values for dims %v", name, len(a.Real), a.Dims)
		}
		typ, data := packNumbers(a.Class, a.Real)
		writeElem(&b, typ, data)
		if a.Complex {
			typ, data := packNumbers(a.Class, a.Imag)
			writeElem(&b, typ, data)
		}
	default:
		return fmt.Errorf("matv5: encode %q: class %s not supported", name, a.Class)
	}
	writeElem(w, miMATRIX, b.Bytes())
	return nil
}

// packNumbers stores values in the class's own type, except doubles that are all integral,
// which go into the smallest integer type that holds them (MATLAB's space-saving behaviour).
func packNumbers(c Class, v []float64) (uint32, []byte) {
	typ := map[Class]uint32{Double: miDOUBLE, Single: miSINGLE, Int8: miINT8, Uint8: miUINT8, Int16: miINT16,
		Uint16: miUINT16, Int32: miINT32, Uint32: miUINT32, Int64: miINT64, Uint64: miUINT64}[c]
	if c == Double {
		lo, hi, integral := 0.0, 0.0, true
		for _, x := range v {
			if x != math.Trunc(x) || math.IsInf(x, 0) {
				integral = false
				break
			}
			lo, hi = min(lo, x), max(hi, x)
		}
		if integral {
			switch {
			case lo >= 0 && hi <= math.MaxUint8:
				typ = miUINT8
			case lo >= math.MinInt16 && hi <= math.MaxInt16:
				typ = miINT16
			case lo >= 0 && hi <= math.MaxUint16:
				typ = miUINT16
			case lo >= math.MinInt32 && hi <= math.MaxInt32:
				typ = miINT32
			}
		}
	}
	var out []byte
	for _, x := range v {
		switch typ {
		case miINT8:
			out = append(out, byte(int8(x)))
		case miUINT8:
			out = append(out, byte(x))
		case miINT16:
			out = binary.LittleEndian.AppendUint16(out, uint16(int16(x)))
		case miUINT16:
			out = binary.LittleEndian.AppendUint16(out, uint16(x))
		case miINT32:
			out = binary.LittleEndian.AppendUint32(out, uint32(int32(x)))
		case miUINT32:
			out = binary.LittleEndian.AppendUint32(out, uint32(x))
		case miSINGLE:
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(x)))
		case miINT64:
			out = binary.LittleEndian.AppendUint64(out, uint64(int64(x)))
		case miUINT64:
			out = binary.LittleEndian.AppendUint64(out, uint64(x))
		default:
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
		}
	}
	return typ, out
}

// Helpers to build arrays (for fixtures and interchange).

// NewDouble returns a real double array with the given column-major values and dims.
func NewDouble(name string, values []float64, dims ...int) *Array {
	return &Array{Name: name, Class: Double, Dims: dims, Real: values}
}

// NewScalar returns a 1×1 double.
func NewScalar(v float64) *Array { return NewDouble("", []float64{v}, 1, 1) }

// NewString returns a 1×n char array.
func NewString(s string) *Array {
	rs := []rune(s)
	return &Array{Class: Char, Dims: []int{1, len(rs)}, Chars: rs}
}

// NewCell returns a 1×n cell array.
func NewCell(name string, cells ...*Array) *Array {
	return &Array{Name: name, Class: Cell, Dims: []int{1, len(cells)}, Cells: cells}
}

// NewStructArray returns a 1×n struct array; elems[i][f] is field fields[f] of element i.
func NewStructArray(name string, fields []string, elems [][]*Array) *Array {
	return &Array{Name: name, Class: Struct, Dims: []int{1, len(elems)}, FieldNames: fields, Fields: elems}
}
