package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The files in testdata/ were written by NumPy 1.24.2 (Debian python3-numpy) with np.save:
//
//	f32_2x3.npy  np.array([[1.5,-2,3],[0.25,5,-6e-3]], dtype='<f4')
//	f64_be.npy   np.array([1.0, -0.5, 3.25], dtype='>f8')          (big-endian)
//	i32.npy      np.array([3, -1, 7, 0], dtype='<i4')
//	i64_2x2.npy  np.array([[1,2],[3,2**40]], dtype='<i8')
//	fortran.npy  np.asfortranarray(np.arange(6, dtype='<f4').reshape(2,3))
//	bool.npy     np.array([True, False])
//	c8.npy       np.array([1+2j], dtype='<c8')   (complex: unsupported)
//	f64_empty.npy np.zeros((0, 4))

func TestReadNumPyFiles(t *testing.T) {
	a, err := Read("testdata/f32_2x3.npy")
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != "float32" || !reflect.DeepEqual(a.Shape, []int{2, 3}) ||
		!reflect.DeepEqual(a.F32, []float32{1.5, -2, 3, 0.25, 5, -6e-3}) {
		t.Fatalf("f32: %+v", a)
	}
	f, shape, err := ReadFloat64("testdata/f64_be.npy")
	if err != nil || !reflect.DeepEqual(f, []float64{1, -0.5, 3.25}) || !reflect.DeepEqual(shape, []int{3}) {
		t.Fatalf("big-endian f64: %v %v %v", f, shape, err)
	}
	i, _, err := ReadInt64("testdata/i32.npy")
	if err != nil || !reflect.DeepEqual(i, []int64{3, -1, 7, 0}) {
		t.Fatalf("i32: %v %v", i, err)
	}
	i, shape, err = ReadInt64("testdata/i64_2x2.npy")
	if err != nil || !reflect.DeepEqual(i, []int64{1, 2, 3, 1 << 40}) || !reflect.DeepEqual(shape, []int{2, 2}) {
		t.Fatalf("i64: %v %v %v", i, shape, err)
	}
	b, _, err := ReadInt64("testdata/bool.npy")
	if err != nil || !reflect.DeepEqual(b, []int64{1, 0}) {
		t.Fatalf("bool: %v %v", b, err)
	}
	e, err := Read("testdata/f64_empty.npy")
	if err != nil || !reflect.DeepEqual(e.Shape, []int{0, 4}) || len(e.F64) != 0 {
		t.Fatalf("empty: %+v %v", e, err)
	}
}

// TestEncodeMatchesNumPy checks our writer produces NumPy's bytes exactly, so Python reads our files.
func TestEncodeMatchesNumPy(t *testing.T) {
	for _, tc := range []struct {
		file  string
		data  any
		shape []int
	}{
		{"f32_2x3.npy", []float32{1.5, -2, 3, 0.25, 5, -6e-3}, []int{2, 3}},
		{"i32.npy", []int32{3, -1, 7, 0}, nil},
		{"i64_2x2.npy", []int64{1, 2, 3, 1 << 40}, []int{2, 2}},
	} {
		want, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Encode(&buf, tc.data, tc.shape...); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s: encoding differs from NumPy's:\n got %q\nwant %q", tc.file, buf.Bytes(), want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, data := range []any{
		[]float32{1, 2, 3, 4, 5, 6}, []float64{-1e300, 0, 1e-300, 6, 7, 8}, []int32{-5, 0, 5, 1, 2, 3}, []int64{-1 << 62, 0, 1 << 62, 1, 2, 3},
	} {
		p := filepath.Join(dir, "x.npy")
		if err := Write(p, data, 3, 2); err != nil {
			t.Fatal(err)
		}
		a, err := Read(p)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		switch {
		case a.F32 != nil:
			got = a.F32
		case a.F64 != nil:
			got = a.F64
		case a.I32 != nil:
			got = a.I32
		default:
			got = a.I64
		}
		if !reflect.DeepEqual(got, data) || !reflect.DeepEqual(a.Shape, []int{3, 2}) {
			t.Errorf("round trip %T: got %v %v", data, got, a.Shape)
		}
	}
}

func TestErrorsNameTheProblem(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.npy")
	full, _ := os.ReadFile("testdata/f32_2x3.npy")
	os.WriteFile(trunc, full[:len(full)-5], 0o644)
	notnpy := filepath.Join(dir, "text.npy")
	os.WriteFile(notnpy, []byte("hello, world"), 0o644)
	for _, tc := range []struct {
		fn   func() error
		want string
	}{
		{func() error { _, err := Read(filepath.Join(dir, "missing.npy")); return err }, "missing.npy"},
		{func() error { _, err := Read(trunc); return err }, "truncated data: 19 of 24 bytes"},
		{func() error { _, err := Read(notnpy); return err }, "not a .npy file"},
		{func() error { _, err := Read("testdata/fortran.npy"); return err }, "Fortran-ordered"},
		{func() error { _, err := Read("testdata/c8.npy"); return err }, "unsupported dtype \"<c8\""},
		{func() error { _, _, err := ReadInt64("testdata/f32_2x3.npy"); return err }, "dtype float32, want int32 or int64 labels"},
		{func() error { _, _, err := ReadFloat32("testdata/i32.npy"); return err }, "dtype int32, want float32 or float64"},
		{func() error { return Write(filepath.Join(dir, "bad.npy"), []float32{1, 2, 3}, 2, 2) }, "shape [2 2] holds 4 elements, data has 3"},
		{func() error { return Write(filepath.Join(dir, "bad.npy"), []string{"a"}) }, "unsupported data type []string"},
	} {
		err := tc.fn()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", err, tc.want)
		}
	}
}
