package data

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// Omniglot file names inside the root directory.
const (
	OmniglotBackgroundFile = "images_background.npz"
	OmniglotEvaluationFile = "images_evaluation.npz"
	// OmniglotBackgroundClasses and OmniglotEvaluationClasses are the character counts of the
	// two files; Omniglot has 20 drawings per character.
	OmniglotBackgroundClasses = 964
	OmniglotEvaluationClasses = 659
	omniglotDrawings          = 20
	omniglotSide              = 105
)

// OmniglotOptions configures [Omniglot].
type OmniglotOptions struct {
	// Root is the directory holding images_background.npz and images_evaluation.npz; empty means
	// search with [FindOmniglot].
	Root string
	// Size is the output side in pixels: 0 means 28; 105 keeps the native resolution. Other
	// sizes are produced by exact area averaging (a box filter with fractional edge weights) of
	// the 105×105 ink mask, so a pixel's value is round(255 · fraction of its area covered by ink).
	Size int
	// Alphabets sets Coarse to the alphabet index (background 0–29, evaluation 30–49) from the
	// table in omniglot_alphabets.go, whose provenance and pixel-level verification are
	// described there. Off by default.
	Alphabets bool
	// ValClasses, when > 0, moves that many background characters (drawn with ValSeed) from
	// Train to Val, class-disjointly, for tuning without touching the evaluation alphabets.
	ValClasses int
	ValSeed    uint64
}

// Omniglot loads the full Omniglot set as the standard class-disjoint split of Lake et al.:
// Train = the 964 background characters (19,280 images, labels 0–963), Test = the 659
// evaluation characters (13,180 images, labels 964–1622, i.e. offset by 964 so the splits never
// share a label). Images are [N, Size, Size, 1] uint8 with 255 = ink and 0 = background (the
// files store the opposite, 0 = ink, declared as booleans), so zero padding means background.
// ClassNames holds "char%04d", the original Omniglot character number (label+1).
func Omniglot(opt OmniglotOptions) (*Split, error) {
	root, err := FindOmniglot(opt.Root)
	if err != nil {
		return nil, err
	}
	size := opt.Size
	if size == 0 {
		size = 28
	}
	train, err := loadOmniglotFileShared(filepath.Join(root, OmniglotBackgroundFile), size, 0)
	if err != nil {
		return nil, err
	}
	test, err := loadOmniglotFileShared(filepath.Join(root, OmniglotEvaluationFile), size, OmniglotBackgroundClasses)
	if err != nil {
		return nil, err
	}
	if train.NumClasses() != OmniglotBackgroundClasses || test.NumClasses() != OmniglotEvaluationClasses {
		return nil, fmt.Errorf("data: omniglot: %s: got %d background and %d evaluation characters, want %d and %d (wrong files?)",
			root, train.NumClasses(), test.NumClasses(), OmniglotBackgroundClasses, OmniglotEvaluationClasses)
	}
	names := make([]string, OmniglotBackgroundClasses+OmniglotEvaluationClasses)
	for i := range names {
		names[i] = fmt.Sprintf("char%04d", i+1)
	}
	train.ClassNames, test.ClassNames = names, names
	train.Name, test.Name = "omniglot/background", "omniglot/evaluation"
	if opt.Alphabets {
		train.Coarse = make([]int32, train.N)
		for i, l := range train.Labels {
			train.Coarse[i] = int32(OmniglotAlphabet(int(l)))
		}
		test.Coarse = make([]int32, test.N)
		for i, l := range test.Labels {
			test.Coarse[i] = int32(OmniglotAlphabet(int(l)))
		}
	}
	out := &Split{Train: train, Test: test}
	if opt.ValClasses > 0 {
		tr, va, err := HoldOutClasses(train, opt.ValClasses, opt.ValSeed)
		if err != nil {
			return nil, err
		}
		tr.Name, va.Name = "omniglot/background-train", "omniglot/background-val"
		out.Train, out.Val = tr, va
	}
	return out, nil
}

// FindOmniglot returns the Omniglot directory, searching in order: explicit (if non-empty, the
// only candidate); $DMLKIT_DATA/omniglot and $DMLKIT_DATA; ../shared/data/omniglot (and
// shared/data/omniglot) relative to the working directory and each of its parents;
// ~/.cache/dmlkit/omniglot (where `dmlkit data fetch omniglot` puts it). A directory qualifies
// when it holds both .npz files.
func FindOmniglot(explicit string) (string, error) {
	var cands []string
	if explicit != "" {
		cands = []string{explicit}
	} else {
		if d := os.Getenv("DMLKIT_DATA"); d != "" {
			cands = append(cands, filepath.Join(d, "omniglot"), d)
		}
		if wd, err := os.Getwd(); err == nil {
			for d := wd; ; d = filepath.Dir(d) {
				cands = append(cands, filepath.Join(d, "..", "shared", "data", "omniglot"), filepath.Join(d, "shared", "data", "omniglot"))
				if filepath.Dir(d) == d {
					break
				}
			}
		}
		if c, err := CacheDir(); err == nil {
			cands = append(cands, filepath.Join(c, "omniglot"))
		}
	}
	for _, c := range cands {
		if isFile(filepath.Join(c, OmniglotBackgroundFile)) && isFile(filepath.Join(c, OmniglotEvaluationFile)) {
			return filepath.Clean(c), nil
		}
	}
	if explicit != "" {
		return "", ferr("omniglot", explicit, 0, ErrMissing, "directory lacks %s and/or %s", OmniglotBackgroundFile, OmniglotEvaluationFile)
	}
	return "", fmt.Errorf("data: omniglot: %w: no directory with %s and %s found (tried $DMLKIT_DATA, ../shared/data/omniglot, ~/.cache/dmlkit/omniglot); run `dmlkit data fetch omniglot`",
		ErrMissing, OmniglotBackgroundFile, OmniglotEvaluationFile)
}

// CacheDir is dmlkit's download cache: $DMLKIT_CACHE if set, else ~/.cache/dmlkit.
func CacheDir() (string, error) {
	if d := os.Getenv("DMLKIT_CACHE"); d != "" {
		return d, nil
	}
	h, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".cache", "dmlkit"), nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// LoadOmniglotFile reads one Omniglot .npz (images.npy [C, 20, 105, 105] with bytes 0 = ink,
// 255 = background; labels.npy int64 [C, 20] with row i = character i) and returns its C·20
// images at size×size (see [OmniglotOptions.Size]) with label = row + labelOffset, 255 = ink.
// Any byte other than 0 or 255, a label that is not its row index, or a short member is an error,
// and so is a file that does not match its PATH.sha256 when one sits beside it ([VerifySidecar]).
func LoadOmniglotFile(path string, size int, labelOffset int32) (*Images, error) {
	const ds = "omniglot"
	if size <= 0 || size > omniglotSide {
		return nil, ferr(ds, path, 0, nil, "size %d out of range 1..%d", size, omniglotSide)
	}
	if err := VerifySidecar(ds, path); err != nil {
		return nil, err
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ferr(ds, path, 0, ErrMissing, "%v", err)
		}
		return nil, ferr(ds, path, 0, ErrFormat, "not a readable .npz (zip) archive: %v", err)
	}
	defer zr.Close()
	var imf, labf *zip.File
	for _, f := range zr.File {
		switch f.Name {
		case "images.npy":
			imf = f
		case "labels.npy":
			labf = f
		}
	}
	if imf == nil || labf == nil {
		return nil, ferr(ds, path, 0, ErrFormat, "archive lacks images.npy or labels.npy")
	}
	// Labels.
	lr, err := labf.Open()
	if err != nil {
		return nil, ferr(ds, path, 0, ErrFormat, "labels.npy: %v", err)
	}
	lh, err := readNPYHeader(lr)
	if err != nil {
		lr.Close()
		return nil, ferr(ds, path, 0, ErrFormat, "labels.npy: %v", err)
	}
	if lh.Descr != "<i8" || lh.Fortran || len(lh.Shape) != 2 || lh.Shape[1] != omniglotDrawings {
		lr.Close()
		return nil, ferr(ds, path, 0, ErrFormat, "labels.npy: dtype %s shape %v, want <i8 [C, 20] in C order", lh.Descr, lh.Shape)
	}
	nChar := lh.Shape[0]
	lb := make([]byte, 8*nChar*omniglotDrawings)
	_, err = io.ReadFull(lr, lb)
	lr.Close()
	if err != nil {
		return nil, ferr(ds, path, 0, ErrTruncated, "labels.npy: %v", err)
	}
	for i := 0; i < nChar*omniglotDrawings; i++ {
		if v := int64(binary.LittleEndian.Uint64(lb[8*i:])); v != int64(i/omniglotDrawings) {
			return nil, ferr(ds, path, 0, ErrFormat, "labels.npy[%d, %d] = %d, want the row index %d", i/omniglotDrawings, i%omniglotDrawings, v, i/omniglotDrawings)
		}
	}
	// Images.
	ir, err := imf.Open()
	if err != nil {
		return nil, ferr(ds, path, 0, ErrFormat, "images.npy: %v", err)
	}
	defer ir.Close()
	ih, err := readNPYHeader(ir)
	if err != nil {
		return nil, ferr(ds, path, 0, ErrFormat, "images.npy: %v", err)
	}
	want := []int{nChar, omniglotDrawings, omniglotSide, omniglotSide}
	if (ih.Descr != "|b1" && ih.Descr != "|u1") || ih.Fortran || !equalInts(ih.Shape, want) {
		return nil, ferr(ds, path, 0, ErrFormat, "images.npy: dtype %s shape %v, want |b1 %v in C order", ih.Descr, ih.Shape, want)
	}
	n := nChar * omniglotDrawings
	out := &Images{Name: ds, N: n, H: size, W: size, C: 1, Pix: make([]uint8, n*size*size), Labels: make([]int32, n)}
	rs := newAreaResizer(omniglotSide, size)
	buf := make([]byte, omniglotSide*omniglotSide)
	for i := 0; i < n; i++ {
		if _, err := io.ReadFull(ir, buf); err != nil {
			return nil, ferr(ds, path, 0, ErrTruncated, "images.npy: image %d of %d: %v", i, n, err)
		}
		for j, b := range buf {
			switch b {
			case 0:
				buf[j] = 255 // ink
			case 255:
				buf[j] = 0
			default:
				return nil, ferr(ds, path, 0, ErrFormat, "images.npy: image %d pixel %d has byte %d, want 0 (ink) or 255 (background)", i, j, b)
			}
		}
		rs.resize(buf, out.Pix[i*size*size:(i+1)*size*size])
		out.Labels[i] = int32(i/omniglotDrawings) + labelOffset
	}
	return out, nil
}

// omniglotFiles holds the images [LoadOmniglotFile] returned in this process, by the file's
// content and the arguments: a sweep trains its runs in one process, and each run's data would
// otherwise decompress, check and resize the same 32,460 drawings again (about 2 s of CPU).
var omniglotFiles = struct {
	sync.Mutex
	m map[omniglotKey]*Images
}{m: map[omniglotKey]*Images{}}

// omniglotSharedMaxSide is the largest image side omniglotFiles keeps (the 19,280 background
// drawings at 32×32 are 20 MB; at the native 105×105, 213 MB would stay in memory for good).
const omniglotSharedMaxSide = 32

type omniglotKey struct {
	digest      [sha256.Size]byte // of the .npz file's bytes
	size        int
	labelOffset int32
}

// loadOmniglotFileShared is [LoadOmniglotFile] through omniglotFiles: the file's sidecar is
// checked and its bytes digested on every call, and a file of the same content loaded before
// with the same arguments gives a copy of the images loaded then (a copy: callers set names and
// coarse labels on what they get). Errors are not kept, nor images of a side above
// omniglotSharedMaxSide.
func loadOmniglotFileShared(path string, size int, labelOffset int32) (*Images, error) {
	if err := VerifySidecar("omniglot", path); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return LoadOmniglotFile(path, size, labelOffset) // its error
	}
	if len(b) > 0 && size > omniglotSharedMaxSide {
		return LoadOmniglotFile(path, size, labelOffset) // large images are not kept
	}
	k := omniglotKey{sha256.Sum256(b), size, labelOffset}
	omniglotFiles.Lock()
	defer omniglotFiles.Unlock()
	im, ok := omniglotFiles.m[k]
	if !ok {
		if im, err = LoadOmniglotFile(path, size, labelOffset); err != nil {
			return nil, err
		}
		if len(omniglotFiles.m) >= 4 { // sizes of one process's runs: a few at most
			clear(omniglotFiles.m)
		}
		omniglotFiles.m[k] = im
	}
	return im.clone(), nil
}

// clone is a deep copy of s.
func (s *Images) clone() *Images {
	c := *s
	c.Pix, c.Labels, c.Coarse, c.ClassNames = slices.Clone(s.Pix), slices.Clone(s.Labels), slices.Clone(s.Coarse), slices.Clone(s.ClassNames)
	return &c
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// areaResizer downsamples a square single-channel image by exact area averaging: output pixel
// o covers the input interval [o·s, (o+1)·s) with s = in/out, and each input pixel contributes
// in proportion to its overlap. The filter is separable, so a row pass and a column pass use the
// same taps. Total intensity is preserved up to rounding: Σout·s² = Σin.
type areaResizer struct {
	in, out int
	taps    [][]areaTap
	tmp     []float32
}

type areaTap struct {
	i int
	w float32
}

func newAreaResizer(in, out int) *areaResizer {
	r := &areaResizer{in: in, out: out, tmp: make([]float32, in*out)}
	s := float64(in) / float64(out)
	for o := 0; o < out; o++ {
		lo, hi := float64(o)*s, float64(o+1)*s
		var taps []areaTap
		for i := int(lo); i < in && float64(i) < hi; i++ {
			ov := min(hi, float64(i+1)) - max(lo, float64(i))
			if ov > 1e-9 {
				taps = append(taps, areaTap{i, float32(ov / s)})
			}
		}
		r.taps = append(r.taps, taps)
	}
	return r
}

// resize writes the out×out area average of src (in×in) into dst.
func (r *areaResizer) resize(src, dst []uint8) {
	if r.in == r.out {
		copy(dst, src)
		return
	}
	in, out := r.in, r.out
	// Row pass: tmp[y, ox].
	for y := 0; y < in; y++ {
		row := src[y*in : (y+1)*in]
		for ox, taps := range r.taps {
			var acc float32
			for _, t := range taps {
				acc += t.w * float32(row[t.i])
			}
			r.tmp[y*out+ox] = acc
		}
	}
	// Column pass.
	for oy, taps := range r.taps {
		for ox := 0; ox < out; ox++ {
			var acc float32
			for _, t := range taps {
				acc += t.w * r.tmp[t.i*out+ox]
			}
			v := acc + 0.5
			if v > 255 {
				v = 255
			}
			dst[oy*out+ox] = uint8(v)
		}
	}
}
