package datasets

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// CUBSplit selects the CUB-200-2011 split.
type CUBSplit int

const (
	// CUBOpenSet is the DML split: classes 1–100 train (5,864 images), 101–200 test (5,924).
	CUBOpenSet CUBSplit = iota
	// CUBOfficial is the train_test_split.txt split (5,994 / 5,794), whose train and test share
	// all 200 classes; seed 000 (TCM) also reports it.
	CUBOfficial
)

// CUB loads CUB-200-2011 from root (the CUB_200_2011 directory): images.txt ("id relpath"),
// image_class_labels.txt ("id class", class 1–200), train_test_split.txt ("id is_train"; read
// only for CUBOfficial), classes.txt ("class name"; optional, gives ClassNames and then also the
// set of valid class ids) and images/<relpath>. Labels are class−1 (0–199). Every image id must
// appear exactly once in images.txt and image_class_labels.txt; errors name the file and line.
func CUB(root string, split CUBSplit, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "cub"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	validClass := func(c int) bool { return c >= 1 && c <= 200 }
	names := map[int32]string{}
	classesPath := filepath.Join(root, "classes.txt")
	if isFile(classesPath) {
		lines, err := readList(ds, classesPath, false)
		if err != nil {
			return nil, err
		}
		known := map[int]bool{}
		for _, l := range lines {
			if len(l.fields) != 2 {
				return nil, ferr(ds, classesPath, l.n, data.ErrFormat, "want \"class_id name\", got %d fields", len(l.fields))
			}
			c, err := strconv.Atoi(l.fields[0])
			if err != nil || c < 1 {
				return nil, ferr(ds, classesPath, l.n, data.ErrFormat, "bad class id %q", l.fields[0])
			}
			known[c] = true
			names[int32(c-1)] = l.fields[1]
		}
		validClass = func(c int) bool { return known[c] }
	}
	// images.txt
	imPath := filepath.Join(root, "images.txt")
	lines, err := readList(ds, imPath, false)
	if err != nil {
		return nil, err
	}
	type rec struct {
		path        string
		line        int
		class       int
		train, seen bool
	}
	recs := map[int]*rec{}
	var order []int
	for _, l := range lines {
		if len(l.fields) != 2 {
			return nil, ferr(ds, imPath, l.n, data.ErrFormat, "want \"image_id relative_path\", got %d fields", len(l.fields))
		}
		id, err := strconv.Atoi(l.fields[0])
		if err != nil {
			return nil, ferr(ds, imPath, l.n, data.ErrFormat, "bad image id %q", l.fields[0])
		}
		if recs[id] != nil {
			return nil, ferr(ds, imPath, l.n, data.ErrFormat, "image id %d repeated (first on line %d)", id, recs[id].line)
		}
		p, err := joinUnder(ds, imPath, l.n, filepath.Join(root, "images"), l.fields[1])
		if err != nil {
			return nil, err
		}
		recs[id] = &rec{path: p, line: l.n}
		order = append(order, id)
	}
	// image_class_labels.txt
	clPath := filepath.Join(root, "image_class_labels.txt")
	if lines, err = readList(ds, clPath, false); err != nil {
		return nil, err
	}
	for _, l := range lines {
		id, c, err := twoInts(l)
		if err != nil {
			return nil, ferr(ds, clPath, l.n, data.ErrFormat, "%v", err)
		}
		r := recs[id]
		if r == nil {
			return nil, ferr(ds, clPath, l.n, data.ErrMissing, "image id %d is not in images.txt", id)
		}
		if r.class != 0 {
			return nil, ferr(ds, clPath, l.n, data.ErrFormat, "image id %d labelled twice", id)
		}
		if !validClass(c) {
			return nil, ferr(ds, clPath, l.n, data.ErrUnknownClass, "class id %d (want 1–200 / a class of classes.txt)", c)
		}
		r.class = c
	}
	if split == CUBOfficial {
		spPath := filepath.Join(root, "train_test_split.txt")
		if lines, err = readList(ds, spPath, false); err != nil {
			return nil, err
		}
		for _, l := range lines {
			id, tr, err := twoInts(l)
			if err != nil || tr < 0 || tr > 1 {
				return nil, ferr(ds, spPath, l.n, data.ErrFormat, "want \"image_id 0|1\"")
			}
			r := recs[id]
			if r == nil {
				return nil, ferr(ds, spPath, l.n, data.ErrMissing, "image id %d is not in images.txt", id)
			}
			if r.seen {
				return nil, ferr(ds, spPath, l.n, data.ErrFormat, "image id %d listed twice", id)
			}
			r.train, r.seen = tr == 1, true
		}
	}
	train := &data.Files{Name: "cub/train", ClassNames: names}
	test := &data.Files{Name: "cub/test", ClassNames: names}
	for _, id := range order {
		r := recs[id]
		if r.class == 0 {
			return nil, ferr(ds, clPath, 0, data.ErrFormat, "image id %d (images.txt line %d) has no class", id, r.line)
		}
		isTrain := r.class <= 100
		if split == CUBOfficial {
			if !r.seen {
				return nil, ferr(ds, filepath.Join(root, "train_test_split.txt"), 0, data.ErrFormat, "image id %d (images.txt line %d) is not in the split file", id, r.line)
			}
			isTrain = r.train
		}
		if err := opt.check(ds, imPath, r.line, r.path); err != nil {
			return nil, err
		}
		dst := test
		if isTrain {
			dst = train
		}
		dst.Paths = append(dst.Paths, r.path)
		dst.Labels = append(dst.Labels, int32(r.class-1))
	}
	return &data.FileSplit{Train: train, Test: test}, nil
}

func twoInts(l listLine) (int, int, error) {
	if len(l.fields) != 2 {
		return 0, 0, fmt.Errorf("want two integers, got %d fields", len(l.fields))
	}
	a, err1 := strconv.Atoi(l.fields[0])
	b, err2 := strconv.Atoi(l.fields[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("want two integers, got %q", l.fields)
	}
	return a, b, nil
}
