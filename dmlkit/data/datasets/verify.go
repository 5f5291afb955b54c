package datasets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Pairs is a face-verification pair list: pair i compares A[i] with B[i], Same[i] says whether
// they show the same identity, and Fold[i] is its cross-validation fold (0-based).
type Pairs struct {
	Name  string
	A, B  []string
	Same  []bool
	Fold  []int
	Folds int
}

// Len is the number of pairs.
func (p *Pairs) Len() int { return len(p.Same) }

// LFWPairs reads LFW's pairs.txt: a header "<folds> <n>" (or a single "<n>", one fold, as in
// pairsDevTrain.txt), then per fold n same-person rows "name i j" followed by n different-person
// rows "name1 i name2 j". Image k of a person is imageRoot/name/name_%04d.jpg. LFW has 10 folds
// of 300 + 300 (6,000 pairs). A row of the wrong kind, a short file or a missing image is an
// error naming the line.
func LFWPairs(pairsFile, imageRoot string, opt LoadOptions) (*Pairs, error) {
	const ds = "lfw"
	lines, err := readList(ds, pairsFile, false)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, ferr(ds, pairsFile, 0, data.ErrFormat, "empty file")
	}
	folds, per := 1, 0
	h := lines[0].fields
	switch len(h) {
	case 1:
		per, err = strconv.Atoi(h[0])
	case 2:
		folds, err = strconv.Atoi(h[0])
		if err == nil {
			per, err = strconv.Atoi(h[1])
		}
	default:
		err = errors.New("bad header")
	}
	if err != nil || folds < 1 || per < 1 {
		return nil, ferr(ds, pairsFile, lines[0].n, data.ErrFormat, "want the header \"<folds> <pairs per class per fold>\", got %q", h)
	}
	rows := lines[1:]
	if len(rows) != 2*folds*per {
		return nil, ferr(ds, pairsFile, 0, data.ErrTruncated, "header announces %d folds × 2 × %d = %d pairs, file has %d rows", folds, per, 2*folds*per, len(rows))
	}
	p := &Pairs{Name: ds, Folds: folds}
	path := func(l listLine, name, idx string) (string, error) {
		k, err := strconv.Atoi(idx)
		if err != nil || k < 1 {
			return "", ferr(ds, pairsFile, l.n, data.ErrFormat, "image number %q", idx)
		}
		q, err := joinUnder(ds, pairsFile, l.n, imageRoot, filepath.Join(name, fmt.Sprintf("%s_%04d.jpg", name, k)))
		if err != nil {
			return "", err
		}
		return q, opt.check(ds, pairsFile, l.n, q)
	}
	for r, l := range rows {
		fold, same := r/(2*per), r%(2*per) < per
		var a, b string
		switch {
		case same && len(l.fields) == 3:
			if a, err = path(l, l.fields[0], l.fields[1]); err == nil {
				b, err = path(l, l.fields[0], l.fields[2])
			}
		case !same && len(l.fields) == 4:
			if a, err = path(l, l.fields[0], l.fields[1]); err == nil {
				b, err = path(l, l.fields[2], l.fields[3])
			}
		default:
			kind, want := "different-person", "name1 i name2 j"
			if same {
				kind, want = "same-person", "name i j"
			}
			return nil, ferr(ds, pairsFile, l.n, data.ErrFormat, "fold %d row %d should be a %s pair \"%s\", got %d fields", fold+1, r%(2*per)+1, kind, want, len(l.fields))
		}
		if err != nil {
			return nil, err
		}
		p.A, p.B = append(p.A, a), append(p.B, b)
		p.Same = append(p.Same, same)
		p.Fold = append(p.Fold, fold)
	}
	return p, nil
}

// BinPairs is an insightface verification set (lfw.bin, cfp_fp.bin, agedb_30.bin): Images holds
// 2N encoded images (JPEG or PNG bytes) and pair i compares Images[2i] with Images[2i+1].
type BinPairs struct {
	Name   string
	Images [][]byte
	Same   []bool
}

// LoadInsightfaceBin reads an insightface .bin file: a pickle of the tuple (bins, issame_list)
// where bins are Python 2 str, Python 3 bytes or 1-D uint8 NumPy arrays of the encoded images,
// and issame_list is a list of bools or a bool array (no pickle code is executed; see
// pickle.go). Each image is checked for JPEG/PNG start and end markers (and fully decoded with
// CheckDecode).
func LoadInsightfaceBin(path string, opt LoadOptions) (*BinPairs, error) {
	const ds = "insightface-bin"
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ferr(ds, path, 0, data.ErrMissing, "file does not exist")
		}
		return nil, ferr(ds, path, 0, nil, "%v", err)
	}
	v, err := unpickle(b)
	if err != nil {
		return nil, ferr(ds, path, 0, nil, "%w", err)
	}
	t, ok := v.(pickleTuple)
	if !ok || len(t) != 2 {
		return nil, ferr(ds, path, 0, data.ErrFormat, "pickle holds %T, want the tuple (bins, issame_list)", v)
	}
	bins, ok := t[0].(*pickleList)
	if !ok {
		return nil, ferr(ds, path, 0, data.ErrFormat, "bins is %T, want a list", t[0])
	}
	same, err := boolsOf(t[1])
	if err != nil {
		return nil, ferr(ds, path, 0, data.ErrFormat, "issame_list: %v", err)
	}
	out := &BinPairs{Name: filepath.Base(path), Same: same}
	if len(bins.items) != 2*len(same) {
		return nil, ferr(ds, path, 0, data.ErrFormat, "%d images for %d pairs, want 2 per pair", len(bins.items), len(same))
	}
	for i, x := range bins.items {
		im, ok := bytesOf(x)
		if !ok {
			return nil, ferr(ds, path, 0, data.ErrFormat, "bins[%d] is %T, want bytes or a 1-D uint8 array", i, x)
		}
		if opt.Check != CheckNone && opt.Check != CheckExists {
			if err := checkImageBytes(im[:min(len(im), 8)], im[max(0, len(im)-64):]); err != nil {
				return nil, ferr(ds, path, 0, err, "bins[%d] (pair %d)", i, i/2)
			}
			if opt.Check == CheckDecode {
				if _, err := decodeBytes(im); err != nil {
					return nil, ferr(ds, path, 0, data.ErrFormat, "bins[%d]: %v", i, err)
				}
			}
		}
		out.Images = append(out.Images, im)
	}
	return out, nil
}
