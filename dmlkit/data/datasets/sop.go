package datasets

import (
	"path/filepath"
	"strconv"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// SOP loads Stanford Online Products from root: Ebay_train.txt and Ebay_test.txt, each with the
// header "image_id class_id super_class_id path" and rows such as
// "1 1 1 bicycle_final/111085122871_0.JPG" (paths relative to root). Train 11,318 classes /
// 59,551 images, test 11,316 / 60,502, class-disjoint. Labels are class_id−1; Coarse is
// super_class_id−1 (12 super-classes, ids 1–12); the super-class folder name is the first path
// component (e.g. "bicycle_final").
func SOP(root string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "sop"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	out := &data.FileSplit{}
	seenIn := map[int32]string{}
	for _, part := range []struct {
		file string
		dst  **data.Files
	}{{"Ebay_train.txt", &out.Train}, {"Ebay_test.txt", &out.Test}} {
		path := filepath.Join(root, part.file)
		lines, err := readList(ds, path, false)
		if err != nil {
			return nil, err
		}
		f := &data.Files{Name: "sop/" + part.file}
		for k, l := range lines {
			if k == 0 {
				if len(l.fields) != 4 || l.fields[0] != "image_id" || l.fields[1] != "class_id" {
					return nil, ferr(ds, path, l.n, data.ErrFormat, "want the header \"image_id class_id super_class_id path\", got %q", l.fields)
				}
				continue
			}
			if len(l.fields) != 4 {
				return nil, ferr(ds, path, l.n, data.ErrFormat, "want \"image_id class_id super_class_id path\", got %d fields", len(l.fields))
			}
			cls, err1 := strconv.Atoi(l.fields[1])
			sup, err2 := strconv.Atoi(l.fields[2])
			if _, err := strconv.Atoi(l.fields[0]); err != nil || err1 != nil || err2 != nil {
				return nil, ferr(ds, path, l.n, data.ErrFormat, "non-integer id in %q", l.fields)
			}
			if cls < 1 {
				return nil, ferr(ds, path, l.n, data.ErrUnknownClass, "class id %d (want ≥ 1)", cls)
			}
			if sup < 1 || sup > 12 {
				return nil, ferr(ds, path, l.n, data.ErrUnknownClass, "super-class id %d (want 1–12)", sup)
			}
			if other, ok := seenIn[int32(cls)]; ok && other != part.file {
				return nil, ferr(ds, path, l.n, data.ErrFormat, "class %d also appears in %s; the SOP split is class-disjoint", cls, other)
			}
			seenIn[int32(cls)] = part.file
			p, err := joinUnder(ds, path, l.n, root, l.fields[3])
			if err != nil {
				return nil, err
			}
			if err := opt.check(ds, path, l.n, p); err != nil {
				return nil, err
			}
			f.Paths = append(f.Paths, p)
			f.Labels = append(f.Labels, int32(cls-1))
			f.Coarse = append(f.Coarse, int32(sup-1))
		}
		if len(lines) == 0 {
			return nil, ferr(ds, path, 0, data.ErrFormat, "empty list")
		}
		*part.dst = f
	}
	return out, nil
}
