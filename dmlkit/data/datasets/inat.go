package datasets

import (
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// INaturalist2018 loads iNaturalist-2018 with the Smooth-AP open-set split from root: the list
// files Inat_dataset_splits/Inaturalist_train_set1.txt and Inaturalist_test_set1.txt (also
// accepted directly in root), one image path per line such as
// "train_val2018/Plantae/7477/3b60c9486db1d2ee875f11a669fbde4a.jpg", relative to root. The label
// is the category id (the second-to-last path component); Coarse is the super-category (the
// component before it), numbered in sorted name order. Train 5,690 classes / 325,846 images,
// test 2,452 unseen classes / 136,093; a class in both lists is an error.
func INaturalist2018(root string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "inat2018"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "Inat_dataset_splits")
	if !isDir(dir) {
		dir = root
	}
	type entry struct {
		p          string
		cat        int
		super      string
		list, line int
	}
	lists := []string{filepath.Join(dir, "Inaturalist_train_set1.txt"), filepath.Join(dir, "Inaturalist_test_set1.txt")}
	var entries [2][]entry
	supers := map[string]int32{}
	classList := map[int]int{}
	for li, lp := range lists {
		lines, err := readList(ds, lp, false)
		if err != nil {
			return nil, err
		}
		if len(lines) == 0 {
			return nil, ferr(ds, lp, 0, data.ErrFormat, "empty list")
		}
		for _, l := range lines {
			if len(l.fields) != 1 {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "want one path per line, got %d fields", len(l.fields))
			}
			parts := strings.Split(path.Clean(l.fields[0]), "/")
			if len(parts) < 3 {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "path %q lacks <super-category>/<category>/<file>", l.fields[0])
			}
			cat, err := strconv.Atoi(parts[len(parts)-2])
			if err != nil || cat < 0 {
				return nil, ferr(ds, lp, l.n, data.ErrUnknownClass, "category %q in %q is not a non-negative integer", parts[len(parts)-2], l.fields[0])
			}
			if prev, ok := classList[cat]; ok && prev != li {
				return nil, ferr(ds, lp, l.n, data.ErrFormat, "category %d appears in both %s and %s; the split must be class-disjoint", cat, filepath.Base(lists[0]), filepath.Base(lists[1]))
			}
			classList[cat] = li
			p, err := joinUnder(ds, lp, l.n, root, l.fields[0])
			if err != nil {
				return nil, err
			}
			sup := parts[len(parts)-3]
			supers[sup] = 0
			entries[li] = append(entries[li], entry{p, cat, sup, li, l.n})
		}
	}
	names := make([]string, 0, len(supers))
	for s := range supers {
		names = append(names, s)
	}
	sort.Strings(names)
	for i, s := range names {
		supers[s] = int32(i)
	}
	out := &data.FileSplit{Train: &data.Files{Name: "inat2018/train"}, Test: &data.Files{Name: "inat2018/test"}}
	for li, dst := range []*data.Files{out.Train, out.Test} {
		for _, e := range entries[li] {
			if err := opt.check(ds, lists[li], e.line, e.p); err != nil {
				return nil, err
			}
			dst.Paths = append(dst.Paths, e.p)
			dst.Labels = append(dst.Labels, int32(e.cat))
			dst.Coarse = append(dst.Coarse, supers[e.super])
		}
	}
	return out, nil
}
