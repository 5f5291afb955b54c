package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// recordMagic is the dmlc/MXNet RecordIO record magic.
const recordMagic = 0xced7230a

// RecordIO reads an MXNet indexed RecordIO pair (.rec + .idx, as used by insightface's
// CASIA-WebFace / MS1M training sets). Each record is u32 magic 0xced7230a, u32 (cflag<<29 |
// length), the payload padded to 4 bytes; cflag 1/2/3 mark the first/middle/last part of a
// payload that was split where it contained the magic (the parts are re-joined with the magic
// between them). The .idx rows are "key\toffset".
type RecordIO struct {
	path string
	f    *os.File
	size int64
	off  map[int]int64
	keys []int
}

// OpenRecordIO opens rec with its index idx. Close it when done.
func OpenRecordIO(recPath, idxPath string) (*RecordIO, error) {
	const ds = "recordio"
	lines, err := readList(ds, idxPath, false)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(recPath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ferr(ds, recPath, 0, data.ErrMissing, "file does not exist")
		}
		return nil, ferr(ds, recPath, 0, nil, "%v", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &RecordIO{path: recPath, f: f, size: st.Size(), off: map[int]int64{}}
	for _, l := range lines {
		if len(l.fields) != 2 {
			f.Close()
			return nil, ferr(ds, idxPath, l.n, data.ErrFormat, "want \"key<TAB>offset\", got %d fields", len(l.fields))
		}
		k, err1 := strconv.Atoi(l.fields[0])
		o, err2 := strconv.ParseInt(l.fields[1], 10, 64)
		if err1 != nil || err2 != nil || o < 0 {
			f.Close()
			return nil, ferr(ds, idxPath, l.n, data.ErrFormat, "bad key or offset %q", l.fields)
		}
		if o+8 > r.size {
			f.Close()
			return nil, ferr(ds, idxPath, l.n, data.ErrTruncated, "offset %d of key %d is beyond the end of %s (%d bytes)", o, k, recPath, r.size)
		}
		if _, dup := r.off[k]; dup {
			f.Close()
			return nil, ferr(ds, idxPath, l.n, data.ErrFormat, "key %d repeated", k)
		}
		r.off[k] = o
		r.keys = append(r.keys, k)
	}
	sort.Ints(r.keys)
	return r, nil
}

// Close closes the .rec file.
func (r *RecordIO) Close() error { return r.f.Close() }

// Keys returns the indexed keys in increasing order.
func (r *RecordIO) Keys() []int { return r.keys }

// Read returns the payload of the record with the given key.
func (r *RecordIO) Read(key int) ([]byte, error) {
	off, ok := r.off[key]
	if !ok {
		return nil, ferr("recordio", r.path, 0, data.ErrMissing, "no record with key %d in the index", key)
	}
	var out []byte
	for part := 0; ; part++ {
		hdr := make([]byte, 8)
		if _, err := r.f.ReadAt(hdr, off); err != nil {
			return nil, ferr("recordio", r.path, 0, data.ErrTruncated, "record %d at byte %d: header: %v", key, off, err)
		}
		if m := binary.LittleEndian.Uint32(hdr); m != recordMagic {
			return nil, ferr("recordio", r.path, 0, data.ErrFormat, "record %d at byte %d: magic %#x, want %#x", key, off, m, recordMagic)
		}
		lr := binary.LittleEndian.Uint32(hdr[4:])
		cflag, n := lr>>29, int64(lr&(1<<29-1))
		if off+8+n > r.size {
			return nil, ferr("recordio", r.path, 0, data.ErrTruncated, "record %d at byte %d: %d-byte payload runs past the end (%d bytes)", key, off, n, r.size)
		}
		buf := make([]byte, n)
		if _, err := r.f.ReadAt(buf, off+8); err != nil {
			return nil, ferr("recordio", r.path, 0, data.ErrTruncated, "record %d: %v", key, err)
		}
		switch {
		case part == 0 && cflag == 0:
			return buf, nil
		case part == 0 && cflag == 1, part > 0 && cflag == 2:
		case part > 0 && cflag == 3:
			return append(append(out, magicBytes()...), buf...), nil
		default:
			return nil, ferr("recordio", r.path, 0, data.ErrFormat, "record %d at byte %d: continuation flag %d out of sequence", key, off, cflag)
		}
		if part > 0 {
			out = append(out, magicBytes()...)
		}
		out = append(out, buf...)
		off += 8 + (n+3)/4*4
	}
}

func magicBytes() []byte { return binary.LittleEndian.AppendUint32(nil, recordMagic) }

// IRHeader is MXNet's image-record header (struct "<IfQQ"): Flag is the number of extra float32
// labels that follow it (0: Label is the label).
type IRHeader struct {
	Flag   uint32
	Label  float32
	ID     uint64
	ID2    uint64
	Labels []float32 // the Flag extra labels
}

// ParseImageRecord splits an image-record payload into its header and the encoded image.
func ParseImageRecord(p []byte) (IRHeader, []byte, error) {
	var h IRHeader
	if len(p) < 24 {
		return h, nil, fmt.Errorf("%w: image record of %d bytes, shorter than its 24-byte header", data.ErrTruncated, len(p))
	}
	h.Flag = binary.LittleEndian.Uint32(p)
	h.Label = math.Float32frombits(binary.LittleEndian.Uint32(p[4:]))
	h.ID = binary.LittleEndian.Uint64(p[8:])
	h.ID2 = binary.LittleEndian.Uint64(p[16:])
	rest := p[24:]
	if h.Flag > 0 {
		if uint64(len(rest)) < 4*uint64(h.Flag) {
			return h, nil, fmt.Errorf("%w: image record announces %d labels but has %d bytes", data.ErrTruncated, h.Flag, len(rest))
		}
		for i := 0; i < int(h.Flag); i++ {
			h.Labels = append(h.Labels, math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:])))
		}
		rest = rest[4*h.Flag:]
	}
	return h, rest, nil
}

// FaceRecords is an insightface training set in RecordIO form.
type FaceRecords struct {
	Rec        *RecordIO
	Keys       []int   // record keys of the images
	Labels     []int32 // identity of each image
	NumClasses int     // from the property file when present, else max label + 1
}

// CASIAWebFace opens an insightface training folder (CASIA-WebFace, MS1M, …): train.rec,
// train.idx and optionally property ("num_classes,height,width"). As in insightface's
// MXFaceDataset, record 0's header carries label[0] = the end of the image key range, so images
// are keys 1..label[0]−1 (when record 0 has no extra labels, every indexed key is an image).
// Each image's header label is its identity, which must be a non-negative integer below
// num_classes. With CheckMarkers the encoded images are checked for JPEG/PNG markers (this reads
// the whole .rec); CheckExists/CheckNone read only headers.
func CASIAWebFace(root string, opt LoadOptions) (*FaceRecords, error) {
	const ds = "casia-webface"
	recPath, idxPath := filepath.Join(root, "train.rec"), filepath.Join(root, "train.idx")
	rec, err := OpenRecordIO(recPath, idxPath)
	if err != nil {
		return nil, err
	}
	fr := &FaceRecords{Rec: rec, NumClasses: -1}
	fail := func(err error) (*FaceRecords, error) {
		rec.Close()
		return nil, err
	}
	propPath := filepath.Join(root, "property")
	if b, err := os.ReadFile(propPath); err == nil {
		f := strings.Split(strings.TrimSpace(string(b)), ",")
		n, err := strconv.Atoi(f[0])
		if err != nil || n < 1 {
			return fail(ferr(ds, propPath, 1, data.ErrFormat, "want \"num_classes,height,width\", got %q", strings.TrimSpace(string(b))))
		}
		fr.NumClasses = n
	}
	keys := rec.Keys()
	if len(keys) > 0 && keys[0] == 0 {
		p, err := rec.Read(0)
		if err != nil {
			return fail(err)
		}
		h, _, err := ParseImageRecord(p)
		if err != nil {
			return fail(ferr(ds, recPath, 0, nil, "record 0: %w", err))
		}
		if h.Flag > 0 {
			end := int(h.Labels[0])
			keys = nil
			for k := 1; k < end; k++ {
				if _, ok := rec.off[k]; !ok {
					return fail(ferr(ds, idxPath, 0, data.ErrMissing, "record 0 announces images 1..%d but key %d is not indexed", end-1, k))
				}
				keys = append(keys, k)
			}
		}
	}
	maxLabel := int32(-1)
	for _, k := range keys {
		p, err := rec.Read(k)
		if err != nil {
			return fail(err)
		}
		h, img, err := ParseImageRecord(p)
		if err != nil {
			return fail(ferr(ds, recPath, 0, nil, "record %d: %w", k, err))
		}
		lab := h.Label
		if h.Flag > 0 {
			lab = h.Labels[0]
		}
		if lab < 0 || lab != float32(math.Trunc(float64(lab))) || fr.NumClasses > 0 && int(lab) >= fr.NumClasses {
			return fail(ferr(ds, recPath, 0, data.ErrUnknownClass, "record %d: label %g (num_classes %d)", k, lab, fr.NumClasses))
		}
		if opt.Check == CheckMarkers || opt.Check == CheckDecode {
			if err := checkImageBytes(img[:min(8, len(img))], img[max(0, len(img)-64):]); err != nil {
				return fail(ferr(ds, recPath, 0, err, "record %d image", k))
			}
		}
		fr.Keys = append(fr.Keys, k)
		fr.Labels = append(fr.Labels, int32(lab))
		maxLabel = max(maxLabel, int32(lab))
	}
	if fr.NumClasses < 0 {
		fr.NumClasses = int(maxLabel) + 1
	}
	return fr, nil
}
