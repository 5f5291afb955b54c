package datasets

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/matv5"
)

// Cars196 loads Stanford Cars from root with the DML split: classes 1–98 train (8,054 images),
// 99–196 test (8,131); the file's own train/test flag is ignored, as in the DML literature.
// It reads cars_annos.mat (MATLAB v5/v7: a 1×16185 struct array "annotations" with fields
// relative_im_path, bbox_x1, bbox_y1, bbox_x2, bbox_y2, class, test, and a 1×196 cell
// "class_names") when present, else the CSV pair anno_train.csv / anno_test.csv (rows
// "file,x1,y1,x2,y2,class", optional header), whose files live in cars_train/ and cars_test/
// (or root when those folders are absent). Labels are class−1; class ids must be 1–196 (or
// within class_names). BBoxes are kept.
func Cars196(root string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "cars196"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	matPath := filepath.Join(root, "cars_annos.mat")
	if isFile(matPath) {
		return cars196Mat(root, matPath, opt)
	}
	tr, te := filepath.Join(root, "anno_train.csv"), filepath.Join(root, "anno_test.csv")
	if !isFile(tr) && !isFile(te) {
		return nil, ferr(ds, root, 0, data.ErrMissing, "neither cars_annos.mat nor anno_train.csv/anno_test.csv found")
	}
	out := &data.FileSplit{Train: &data.Files{Name: "cars196/train"}, Test: &data.Files{Name: "cars196/test"}}
	for _, c := range []struct{ csv, dir string }{{tr, "cars_train"}, {te, "cars_test"}} {
		lines, err := readList(ds, c.csv, true)
		if err != nil {
			return nil, err
		}
		imDir := filepath.Join(root, c.dir)
		if !isDir(imDir) {
			imDir = root
		}
		for k, l := range lines {
			if len(l.fields) != 6 {
				return nil, ferr(ds, c.csv, l.n, data.ErrFormat, "want \"file,x1,y1,x2,y2,class\", got %d fields", len(l.fields))
			}
			var v [5]int
			bad := false
			for j := range v {
				n, err := strconv.Atoi(l.fields[j+1])
				if err != nil {
					bad = true
				}
				v[j] = n
			}
			if bad {
				if k == 0 { // header line
					continue
				}
				return nil, ferr(ds, c.csv, l.n, data.ErrFormat, "non-integer box or class in %q", strings.Join(l.fields, ","))
			}
			p, err := joinUnder(ds, c.csv, l.n, imDir, l.fields[0])
			if err != nil {
				return nil, err
			}
			if err := addCar(out, ds, c.csv, l.n, p, v[4], [4]int32{int32(v[0]), int32(v[1]), int32(v[2]), int32(v[3])}, 196, opt); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

func isDir(p string) bool {
	st, err := statDir(p)
	return err == nil && st
}

func addCar(out *data.FileSplit, ds, list string, line int, path string, class int, box [4]int32, nClasses int, opt LoadOptions) error {
	if class < 1 || class > nClasses {
		return ferr(ds, list, line, data.ErrUnknownClass, "class id %d (want 1–%d)", class, nClasses)
	}
	if box[0] > box[2] || box[1] > box[3] {
		return ferr(ds, list, line, data.ErrFormat, "bounding box %v has x1 > x2 or y1 > y2", box)
	}
	if err := opt.check(ds, list, line, path); err != nil {
		return err
	}
	dst := out.Test
	if class <= nClasses/2 {
		dst = out.Train
	}
	dst.Paths = append(dst.Paths, path)
	dst.Labels = append(dst.Labels, int32(class-1))
	dst.BBoxes = append(dst.BBoxes, box)
	return nil
}

// cars196Mat reads cars_annos.mat with package matv5. "Line" in its errors is the 1-based
// annotation index.
func cars196Mat(root, matPath string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "cars196"
	b, err := os.ReadFile(matPath)
	if err != nil {
		return nil, ferr(ds, matPath, 0, nil, "%w", err)
	}
	f, err := matv5.Decode(b)
	if err != nil {
		kind := data.ErrFormat
		if errors.Is(err, io.ErrUnexpectedEOF) {
			kind = data.ErrTruncated
		}
		return nil, ferr(ds, matPath, 0, kind, "%v", err)
	}
	ann, err := f.Var("annotations")
	if err != nil {
		return nil, ferr(ds, matPath, 0, data.ErrFormat, "%v", err)
	}
	if ann.Class != matv5.Struct {
		return nil, ferr(ds, matPath, 0, data.ErrFormat, "annotations is %s, want a struct array", ann.Class)
	}
	nClasses := 196
	names := map[int32]string{}
	if cn, err := f.Var("class_names"); err == nil {
		if cn.Class != matv5.Cell {
			return nil, ferr(ds, matPath, 0, data.ErrFormat, "class_names is %s, want a cell array", cn.Class)
		}
		nClasses = cn.Len()
		for i, c := range cn.Cells {
			names[int32(i)] = c.String()
		}
	}
	out := &data.FileSplit{Train: &data.Files{Name: "cars196/train", ClassNames: names}, Test: &data.Files{Name: "cars196/test", ClassNames: names}}
	for i := 0; i < ann.Len(); i++ {
		num := func(field string) (int, error) {
			a, err := ann.Field(i, field)
			if err != nil {
				return 0, err
			}
			v, err := a.Scalar()
			if err != nil {
				return 0, err
			}
			if v != math.Trunc(v) {
				return 0, fmt.Errorf("field %s = %g is not an integer", field, v)
			}
			return int(v), nil
		}
		pa, err := ann.Field(i, "relative_im_path")
		if err != nil {
			return nil, ferr(ds, matPath, i+1, data.ErrFormat, "annotation %d: %v", i+1, err)
		}
		if pa.Class != matv5.Char {
			return nil, ferr(ds, matPath, i+1, data.ErrFormat, "annotation %d: relative_im_path is %s, want char", i+1, pa.Class)
		}
		var v [5]int
		for j, fld := range []string{"bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class"} {
			if v[j], err = num(fld); err != nil {
				return nil, ferr(ds, matPath, i+1, data.ErrFormat, "annotation %d: %v", i+1, err)
			}
		}
		p, err := joinUnder(ds, matPath, i+1, root, pa.String())
		if err != nil {
			return nil, err
		}
		if err := addCar(out, ds, matPath, i+1, p, v[4], [4]int32{int32(v[0]), int32(v[1]), int32(v[2]), int32(v[3])}, nClasses, opt); err != nil {
			return nil, err
		}
	}
	return out, nil
}
