package matv5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// header returns a 128-byte MAT header with the given endian indicator bytes.
func header(order binary.ByteOrder) []byte {
	h := make([]byte, 128)
	copy(h, "MATLAB 5.0 MAT-file, hand-made test")
	order.PutUint16(h[124:], 0x0100)
	if order == binary.LittleEndian {
		copy(h[126:], "IM")
	} else {
		copy(h[126:], "MI")
	}
	return h
}

// TestDecodeHandBuilt decodes files assembled byte by byte from the format specification,
// independently of Encode: a little-endian 1×2 double "x" = [3.5, -1] with the name in the
// small-element form, and a big-endian 1×2 char "ab" named "s" stored as miUINT16.
func TestDecodeHandBuilt(t *testing.T) {
	le := binary.LittleEndian
	var b []byte
	b = append(b, header(le)...)
	u32 := func(o binary.ByteOrder, v ...uint32) []byte {
		out := make([]byte, 4*len(v))
		for i, x := range v {
			o.PutUint32(out[4*i:], x)
		}
		return out
	}
	var body []byte
	body = append(body, u32(le, miUINT32, 8, uint32(Double), 0)...) // array flags
	body = append(body, u32(le, miINT32, 8, 1, 2)...)               // dims 1×2
	body = append(body, u32(le, 1<<16|miINT8)...)                   // small element: 1 byte name
	body = append(body, 'x', 0, 0, 0)
	body = append(body, u32(le, miDOUBLE, 16)...)
	body = le.AppendUint64(body, math.Float64bits(3.5))
	body = le.AppendUint64(body, math.Float64bits(-1))
	b = append(b, u32(le, miMATRIX, uint32(len(body)))...)
	b = append(b, body...)
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	x, err := f.Var("x")
	if err != nil {
		t.Fatal(err)
	}
	if x.Class != Double || !reflect.DeepEqual(x.Dims, []int{1, 2}) || !reflect.DeepEqual(x.Real, []float64{3.5, -1}) {
		t.Errorf("x = %+v", x)
	}

	be := binary.BigEndian
	b = header(be)
	body = nil
	body = append(body, u32(be, miUINT32, 8, uint32(Char), 0)...)
	body = append(body, u32(be, miINT32, 8, 1, 2)...)
	body = append(body, u32(be, 1<<16|miINT8)...)
	body = append(body, 's', 0, 0, 0)
	body = append(body, u32(be, 4<<16|miUINT16)...) // small element: 2 UTF-16 units
	body = append(body, 0, 'a', 0, 'b')
	b = append(b, u32(be, miMATRIX, uint32(len(body)))...)
	b = append(b, body...)
	f, err = Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := f.Var("s"); s == nil || s.String() != "ab" {
		t.Errorf("s = %+v", s)
	}
	if _, err := f.Var("nope"); err == nil {
		t.Error("missing variable found")
	}
}

// carsLike builds a cars_annos.mat-shaped pair of variables.
func carsLike() []*Array {
	fields := []string{"relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"}
	var elems [][]*Array
	for _, c := range []struct {
		path           string
		x1, y1, x2, y2 float64
		cls, test      float64
	}{
		{"car_ims/000001.jpg", 112, 7, 853, 717, 1, 0},
		{"car_ims/000002.jpg", 48, 24, 441, 202, 1, 0},
		{"car_ims/016185.jpg", 9, 1, 1000, 600, 196, 1}, // 1000 needs int16 storage
	} {
		elems = append(elems, []*Array{NewString(c.path), NewScalar(c.x1), NewScalar(c.y1), NewScalar(c.x2),
			NewScalar(c.y2), NewScalar(c.cls), NewScalar(c.test)})
	}
	return []*Array{
		NewStructArray("annotations", fields, elems),
		NewCell("class_names", NewString("AM General Hummer SUV 2000"), NewString("Acura RL Sedan 2012")),
		NewDouble("frac", []float64{0.25, -2.5, 1e300, 4}, 2, 2),
	}
}

// TestRoundTrip encodes a cars_annos.mat-shaped file (compressed and not) and decodes it.
func TestRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		if err := Encode(&buf, carsLike(), compress); err != nil {
			t.Fatal(err)
		}
		f, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("compress=%v: %v", compress, err)
		}
		ann, err := f.Var("annotations")
		if err != nil {
			t.Fatal(err)
		}
		if ann.Len() != 3 || len(ann.FieldNames) != 7 {
			t.Fatalf("annotations: %d elements, fields %v", ann.Len(), ann.FieldNames)
		}
		p, _ := ann.Field(2, "relative_im_path")
		cls, _ := ann.Field(2, "class")
		x2, _ := ann.Field(2, "bbox_x2")
		c, _ := cls.Scalar()
		x, _ := x2.Scalar()
		if p.String() != "car_ims/016185.jpg" || c != 196 || x != 1000 || cls.Class != Double {
			t.Errorf("element 2: %q class %v x2 %v", p.String(), c, x)
		}
		if _, err := ann.Field(0, "nope"); err == nil {
			t.Error("missing field found")
		}
		names, _ := f.Var("class_names")
		if names.Class != Cell || names.Len() != 2 || names.Cells[1].String() != "Acura RL Sedan 2012" {
			t.Errorf("class_names %+v", names)
		}
		fr, _ := f.Var("frac")
		if !reflect.DeepEqual(fr.Real, []float64{0.25, -2.5, 1e300, 4}) {
			t.Errorf("frac %v", fr.Real)
		}
	}
	// Integral doubles are stored as small integers, as MATLAB does: the class byte says double,
	// the data tag says miUINT8 (type 2) for a 1×1 value of 7 → small element 0x00010002.
	var buf bytes.Buffer
	Encode(&buf, []*Array{NewDouble("v", []float64{7}, 1, 1)}, false)
	if !bytes.Contains(buf.Bytes(), []byte{2, 0, 1, 0, 7, 0, 0, 0}) {
		t.Error("integral double not stored as a small miUINT8 element")
	}
}

// TestDecodeDamaged: every truncation and many random byte flips give an error or a result,
// never a panic; truncations are always errors.
func TestDecodeDamaged(t *testing.T) {
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		Encode(&buf, carsLike(), compress)
		b := buf.Bytes()
		for n := 0; n < len(b); n++ {
			if _, err := Decode(b[:n]); err == nil {
				// A cut exactly between top-level variables is a valid shorter file.
				if f, _ := Decode(b[:n]); len(f.Vars) == 3 {
					t.Fatalf("compress=%v: prefix %d of %d decoded all variables", compress, n, len(b))
				}
			} else if !errors.Is(err, ErrFormat) {
				t.Fatalf("prefix %d: error %v does not wrap ErrFormat", n, err)
			}
		}
		r := rand.New(rand.NewPCG(1, 2))
		for k := 0; k < 3000; k++ {
			c := bytes.Clone(b)
			for j := 0; j < 3; j++ {
				c[128+r.IntN(len(c)-128)] = byte(r.IntN(256))
			}
			Decode(c) // must not panic
		}
	}
	if _, err := Decode(make([]byte, 10)); !errors.Is(err, ErrFormat) {
		t.Errorf("short file: %v", err)
	}
	h := header(binary.LittleEndian)
	copy(h[126:], "XX")
	if _, err := Decode(h); !errors.Is(err, ErrFormat) {
		t.Errorf("bad endian indicator: %v", err)
	}
}

// FuzzDecode: arbitrary bytes never panic the MAT decoder (seeds: the cars-like file,
// compressed and not).
func FuzzDecode(f *testing.F) {
	for _, c := range []bool{false, true} {
		var b bytes.Buffer
		Encode(&b, carsLike(), c)
		f.Add(b.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Decode(b)
	})
}

// TestSciPyFiles decodes MAT files written by SciPy 1.10 (testdata/README.md), compressed and
// not: struct fields stored as uint8/uint16 classes, a cell of strings including non-ASCII
// characters, and a column-major 2×2 double.
func TestSciPyFiles(t *testing.T) {
	for _, name := range []string{"cars_annos_scipy.mat", "cars_annos_scipy_raw.mat"} {
		f, err := ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		ann, err := f.Var("annotations")
		if err != nil {
			t.Fatal(err)
		}
		if ann.Class != Struct || !reflect.DeepEqual(ann.Dims, []int{1, 3}) || len(ann.FieldNames) != 7 || ann.FieldNames[5] != "class" {
			t.Fatalf("%s: annotations %s %v fields %v", name, ann.Class, ann.Dims, ann.FieldNames)
		}
		p, _ := ann.Field(2, "relative_im_path")
		x2, _ := ann.Field(2, "bbox_x2")
		c, _ := ann.Field(2, "class")
		xv, _ := x2.Scalar()
		cv, _ := c.Scalar()
		if p.String() != "car_ims/008145.jpg" || xv != 1000 || x2.Class != Uint16 || cv != 99 || c.Class != Uint8 {
			t.Errorf("%s: element 2 = %q, x2 %v (%s), class %v (%s)", name, p.String(), xv, x2.Class, cv, c.Class)
		}
		cn, err := f.Var("class_names")
		if err != nil || cn.Class != Cell || cn.Len() != 196 || cn.Cells[195].String() != "Car 196" || cn.Cells[2].String() != "Ünïcode Car 2010" || cn.Cells[0].String() != "AM General Hummer SUV 2000" {
			t.Errorf("%s: class_names %v %+v", name, err, cn)
		}
	}
	f, _ := ReadFile("testdata/cars_annos_scipy.mat")
	fr, err := f.Var("frac")
	// Column-major: [[0.25, -2.5], [1e300, 4]] is stored 0.25, 1e300, -2.5, 4.
	if err != nil || !reflect.DeepEqual(fr.Real, []float64{0.25, 1e300, -2.5, 4}) || !reflect.DeepEqual(fr.Dims, []int{2, 2}) {
		t.Errorf("frac: %v %+v", err, fr)
	}
}
