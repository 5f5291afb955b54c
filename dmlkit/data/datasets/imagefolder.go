package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Image folders: the layout users keep their own data in. Two layouts are read:
//
//   - split folders, <root>/train/<class>/<image> and <root>/test/<class>/<image>;
//   - class folders only, <root>/<class>/<image>, split class-disjointly by a stated rule.
//
// Images are files ending in .jpg, .jpeg or .png (any case). Names starting with "." (.DS_Store,
// editor files) are skipped; any other file, or a folder below a class folder, is an error
// naming it. Class names are the folder names; labels are the indices of the classes in byte
// order of their names over both splits (CIFAR-10's folders airplane … truck thus get CIFAR-10's
// own labels 0–9), and files are taken in byte order of their names.

// Default splits of [ImageFolderOptions.Split].
const (
	// FolderSplitSorted: the classes in name order; the first K − ⌈TestFraction·K⌉ train, the
	// others test (CUB's and Cars196's DML splits and the MNIST 0–4 / 5–9 rule are of this kind).
	FolderSplitSorted = "sorted"
	// FolderSplitRandom: the classes in name order are shuffled by a PCG generator seeded
	// (SplitSeed, 0x1f0d); the first ⌈TestFraction·K⌉ of the shuffled list test, the others train.
	FolderSplitRandom = "random"
)

// ImageFolderOptions configures [ListImageFolder] and [LoadImageFolder]. Zero values take the
// defaults.
type ImageFolderOptions struct {
	// Name names the dataset in errors and in Images.Name (default "imagefolder").
	Name string
	// TrainClasses names the training classes (folder names); every other class is a test class.
	// Empty: the classes are split by Split.
	TrainClasses []string
	// Split is the rule choosing the test classes when TrainClasses is empty: FolderSplitSorted
	// (default) or FolderSplitRandom, with TestFraction (default 0.5) and SplitSeed.
	Split        string
	TestFraction float64
	SplitSeed    uint64
	// Closed keeps every class of each split folder (the closed-set split of the folders; only
	// with split folders). By default the split is class-disjoint:
	//   - split folders whose class sets are already disjoint are used as they are;
	//   - otherwise (e.g. CIFAR-10, the same ten classes in train/ and test/) Train keeps the
	//     train/ images of the training classes and Test the test/ images of the test classes,
	//     as the MNIST-style open-set split ([data.OpenSet]) does;
	//   - class folders only: Train holds every image of the training classes, Test every image
	//     of the test classes.
	Closed bool
	// PerClass keeps the first n images (in name order) of each class in each split; 0 = all.
	// For smoke tests.
	PerClass int
	// ValClasses, when > 0, moves ⌈ValClasses·K⌉ of the K training classes, chosen by
	// [data.ValClassSplit] with ValSeed, from Train to Val (the held-out classes tuning uses; the
	// trainer does this itself with data.val_classes).
	ValClasses float64
	ValSeed    uint64
	// Check is how [ListImageFolder] checks each file (default CheckMarkers: JPEG/PNG start and
	// end markers; [LoadImageFolder] decodes every file anyway).
	Check Check
	// Size is the side of the square images [LoadImageFolder] returns: each whole image is
	// resized to Size×Size with the pipeline's antialiased bilinear filter ([raster.Resize];
	// the aspect ratio is not kept). Default 64. Memory: Size²·3 bytes per image (12 KiB at 64,
	// 27 KiB at 96, 48 KiB at 128).
	Size int
	// Workers bounds the concurrent decodes of [LoadImageFolder] (0: GOMAXPROCS).
	Workers int
	// Progress, when non-nil, is called after each decoded image (from worker goroutines).
	Progress func(done, total int)
}

func (o *ImageFolderOptions) name() string {
	if o.Name == "" {
		return "imagefolder"
	}
	return o.Name
}

// folderEntry is one image of an image folder: its split folder ("" without split folders),
// class folder, and where to read it (a path, or a name inside an archive).
type folderEntry struct {
	split, class, path string
}

// isImageName reports whether name ends in .jpg, .jpeg or .png (any case).
func isImageName(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".jpg", ".jpeg", ".png":
		return true
	}
	return false
}

// ListImageFolder lists the images under root (see the layouts above) and splits them as o
// says. Train and Test are [data.Files] with dense labels (the classes in name order), ClassNames
// maps every label to its folder name; with o.ValClasses the held-out training classes are
// returned as the third value (nil otherwise). Errors name the offending file or folder.
func ListImageFolder(root string, o ImageFolderOptions) (*data.FileSplit, *data.Files, error) {
	ds := o.name()
	if err := requireDir(ds, root); err != nil {
		return nil, nil, err
	}
	top, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, ferr(ds, root, 0, nil, "%v", err)
	}
	hasSplit := map[string]bool{}
	for _, e := range top {
		if e.IsDir() && (e.Name() == "train" || e.Name() == "test") {
			hasSplit[e.Name()] = true
		}
	}
	var entries []folderEntry
	readClass := func(split, dir, class string) error {
		files, err := os.ReadDir(dir)
		if err != nil {
			return ferr(ds, dir, 0, nil, "%v", err)
		}
		for _, f := range files {
			p := filepath.Join(dir, f.Name())
			switch {
			case strings.HasPrefix(f.Name(), "."):
			case f.IsDir():
				return ferr(ds, p, 0, data.ErrFormat, "a folder inside class folder %s (the layout is <root>/[train|test/]<class>/<image>)", class)
			case !isImageName(f.Name()):
				return ferr(ds, p, 0, data.ErrFormat, "not an image (want .jpg, .jpeg or .png)")
			default:
				if err := o.check(ds, p); err != nil {
					return err
				}
				entries = append(entries, folderEntry{split, class, p})
			}
		}
		return nil
	}
	readClasses := func(split, dir string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return ferr(ds, dir, 0, nil, "%v", err)
		}
		n := 0
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case strings.HasPrefix(e.Name(), "."):
			case !e.IsDir():
				return ferr(ds, p, 0, data.ErrFormat, "a file where class folders are expected (the layout is <root>/[train|test/]<class>/<image>)")
			default:
				if err := readClass(split, p, e.Name()); err != nil {
					return err
				}
				n++
			}
		}
		if n == 0 {
			return ferr(ds, dir, 0, data.ErrMissing, "no class folders")
		}
		return nil
	}
	switch {
	case hasSplit["train"] && hasSplit["test"]:
		for _, e := range top {
			if !strings.HasPrefix(e.Name(), ".") && e.Name() != "train" && e.Name() != "test" {
				return nil, nil, ferr(ds, filepath.Join(root, e.Name()), 0, data.ErrFormat, "beside train/ and test/: a root with split folders holds only those two")
			}
		}
		for _, sp := range []string{"train", "test"} {
			if err := readClasses(sp, filepath.Join(root, sp)); err != nil {
				return nil, nil, err
			}
		}
	case hasSplit["train"] || hasSplit["test"]:
		return nil, nil, ferr(ds, root, 0, data.ErrMissing, "has a train/ or a test/ folder but not both (split folders need both; class folders only need neither)")
	default:
		if err := readClasses("", root); err != nil {
			return nil, nil, err
		}
	}
	return splitFolder(ds, entries, o)
}

// check applies o.Check to one file.
func (o ImageFolderOptions) check(ds, path string) error {
	return LoadOptions{Check: o.Check}.check(ds, path, 0, path)
}

// splitFolder turns the entries of an image folder into the split o asks for.
func splitFolder(ds string, entries []folderEntry, o ImageFolderOptions) (*data.FileSplit, *data.Files, error) {
	if len(entries) == 0 {
		return nil, nil, fmt.Errorf("data: %s: no images", ds)
	}
	sort.Slice(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if a.split != b.split {
			return a.split > b.split // train before test
		}
		if a.class != b.class {
			return a.class < b.class
		}
		return a.path < b.path
	})
	splitFolders := entries[0].split != ""
	classSet := map[string]map[string]bool{} // split → classes
	var classes []string
	seen := map[string]bool{}
	for _, e := range entries {
		if classSet[e.split] == nil {
			classSet[e.split] = map[string]bool{}
		}
		classSet[e.split][e.class] = true
		if !seen[e.class] {
			seen[e.class] = true
			classes = append(classes, e.class)
		}
	}
	sort.Strings(classes)
	label := map[string]int32{}
	for i, c := range classes {
		label[c] = int32(i)
	}
	if o.Closed && !splitFolders {
		return nil, nil, fmt.Errorf("data: %s: closed: needs split folders train/ and test/", ds)
	}
	disjoint := splitFolders && !o.Closed
	if disjoint {
		for c := range classSet["train"] {
			if classSet["test"][c] {
				disjoint = false
				break
			}
		}
	}
	isTrain := map[string]bool{}
	switch {
	case o.Closed:
		if len(o.TrainClasses) > 0 {
			return nil, nil, fmt.Errorf("data: %s: train_classes together with closed: a closed split keeps every class", ds)
		}
	case disjoint:
		// The folders are already class-disjoint: train/ classes train, test/ classes test.
		if len(o.TrainClasses) > 0 {
			return nil, nil, fmt.Errorf("data: %s: train_classes: the classes of train/ and test/ are already disjoint", ds)
		}
		for c := range classSet["train"] {
			isTrain[c] = true
		}
	case len(o.TrainClasses) > 0:
		for _, c := range o.TrainClasses {
			if !seen[c] {
				return nil, nil, fmt.Errorf("data: %s: train_classes: no class folder %q (classes: %s)", ds, c, strings.Join(classes, ", "))
			}
			isTrain[c] = true
		}
		if len(isTrain) == len(classes) {
			return nil, nil, fmt.Errorf("data: %s: train_classes names all %d classes: none left for testing", ds, len(classes))
		}
	default:
		f := o.TestFraction
		if f == 0 {
			f = 0.5
		}
		if !(f > 0 && f < 1) {
			return nil, nil, fmt.Errorf("data: %s: test_fraction %g: want a fraction in (0, 1)", ds, o.TestFraction)
		}
		nt := int(math.Ceil(f * float64(len(classes))))
		if nt >= len(classes) {
			return nil, nil, fmt.Errorf("data: %s: test_fraction %g of %d classes leaves none for training", ds, f, len(classes))
		}
		order := slices.Clone(classes)
		switch o.Split {
		case "", FolderSplitSorted:
			for _, c := range order[:len(order)-nt] {
				isTrain[c] = true
			}
		case FolderSplitRandom:
			r := rand.New(rand.NewPCG(o.SplitSeed, 0x1f0d))
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, c := range order[nt:] {
				isTrain[c] = true
			}
		default:
			return nil, nil, fmt.Errorf("data: %s: split %q: want %s or %s", ds, o.Split, FolderSplitSorted, FolderSplitRandom)
		}
	}
	names := make(map[int32]string, len(classes))
	for c, l := range label {
		names[l] = c
	}
	train := &data.Files{Name: ds + "/train", ClassNames: names}
	test := &data.Files{Name: ds + "/test", ClassNames: names}
	count := map[[2]string]int{}
	for _, e := range entries {
		var dst *data.Files
		switch {
		case o.Closed:
			dst = test
			if e.split == "train" {
				dst = train
			}
		case splitFolders && e.split == "train" && isTrain[e.class]:
			dst = train
		case splitFolders && e.split == "test" && !isTrain[e.class]:
			dst = test
		case !splitFolders && isTrain[e.class]:
			dst = train
		case !splitFolders:
			dst = test
		default:
			continue // train/ images of test classes, test/ images of training classes
		}
		k := [2]string{e.split, e.class}
		if o.PerClass > 0 && count[k] >= o.PerClass {
			continue
		}
		count[k]++
		dst.Paths = append(dst.Paths, e.path)
		dst.Labels = append(dst.Labels, label[e.class])
	}
	if train.Len() == 0 || test.Len() == 0 {
		return nil, nil, fmt.Errorf("data: %s: the split leaves %d training and %d test images", ds, train.Len(), test.Len())
	}
	var val *data.Files
	if o.ValClasses > 0 {
		vc, err := data.ValClassSplit(data.Distinct(train.Labels), o.ValClasses, o.ValSeed)
		if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", ds, err)
		}
		tr := &data.Files{Name: ds + "/train", ClassNames: names}
		val = &data.Files{Name: ds + "/val", ClassNames: names}
		for i, l := range train.Labels {
			dst := tr
			if vc[l] {
				dst = val
			}
			dst.Paths = append(dst.Paths, train.Paths[i])
			dst.Labels = append(dst.Labels, l)
		}
		train = tr
	}
	return &data.FileSplit{Train: train, Test: test}, val, nil
}

// LoadImageFolder lists the images under root ([ListImageFolder]) and decodes them into
// in-memory [Images] of o.Size×o.Size×3 (RGB; grey images are expanded), each whole image
// resized with the pipeline's antialiased bilinear filter, with up to o.Workers concurrent
// decodes. ClassNames is indexed by label. The first file that fails to decode is an error
// naming it.
func LoadImageFolder(root string, o ImageFolderOptions) (*data.Split, error) {
	lst, val, err := ListImageFolder(root, o)
	if err != nil {
		return nil, err
	}
	if o.Size == 0 {
		o.Size = 64
	}
	out := &data.Split{}
	parts := []struct {
		f   *data.Files
		dst **data.Images
	}{{lst.Train, &out.Train}, {val, &out.Val}, {lst.Test, &out.Test}}
	for _, p := range parts {
		if p.f == nil {
			continue
		}
		im, err := decodeFiles(o.name(), p.f, o.Size, o.Workers, o.Progress)
		if err != nil {
			return nil, err
		}
		*p.dst = im
	}
	return out, nil
}

// decodeFiles decodes the files of f into size×size RGB [Images].
func decodeFiles(ds string, f *data.Files, size, workers int, progress func(done, total int)) (*data.Images, error) {
	names := classNameSlice(f.ClassNames)
	read := func(i int) ([]byte, error) {
		b, err := os.ReadFile(f.Paths[i])
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ferr(ds, f.Paths[i], 0, data.ErrMissing, "%v", err)
		}
		return b, err
	}
	return decodeImages(ds, f.Name, len(f.Paths), size, workers, func(i int) string { return f.Paths[i] }, read, f.Labels, names, progress)
}

// classNameSlice turns a label → name map into a slice indexed by label.
func classNameSlice(m map[int32]string) []string {
	n := int32(-1)
	for l := range m {
		n = max(n, l)
	}
	if n < 0 {
		return nil
	}
	out := make([]string, n+1)
	for l, s := range m {
		if l >= 0 {
			out[l] = s
		}
	}
	return out
}
