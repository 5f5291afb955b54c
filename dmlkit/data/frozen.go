package data

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

// The feature cache and the frozen-backbone stage of the data preparation (moved from the
// trainer, issue 44): what a fixed backbone part computes from each input, cached on disk by the
// input's digest.

// FeatureCache maps image digests (SHA-256 of an input's pixels) to backbone features of one
// backbone key. On disk it is a directory of part files, each written whole (atomically):
//
//	"DMLKFC2\n", F and n as little-endian uint32, n 32-byte digests, n·F little-endian float32,
//	then the SHA-256 of all the bytes before it.
//
// Parts only add features; readers take the union, so concurrent runs that compute the same
// images write duplicate entries that agree, and an interrupted run loses only its unwritten part.
// A part whose checksum, length or header is wrong (or one of the older layout without a
// checksum) is not trusted: its entries count as missing, so they are computed again, and the
// file is removed.
type FeatureCache struct {
	dir string
	f   int
	m   map[[32]byte][]float32
}

const FeatureCacheMagic = "DMLKFC2\n"

// OpenFeatureCache reads the parts in dir. Each part that fails its check is removed and
// reported through warn (when not nil) naming the file and what was wrong; its entries are
// then missing. Parts that pass their checks but disagree on the feature width are an error.
func OpenFeatureCache(dir string, warn func(string)) (*FeatureCache, error) {
	c := &FeatureCache{dir: dir, m: map[[32]byte][]float32{}}
	names, err := filepath.Glob(filepath.Join(dir, "part-*.bin"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, p := range names {
		damaged, err := c.readPart(p)
		if err != nil {
			return nil, err
		}
		if damaged == "" {
			continue
		}
		msg := fmt.Sprintf("feature cache: %s: %s; not used, its features are computed again", p, damaged)
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			msg += fmt.Sprintf(" (removing it: %v)", err)
		}
		if warn != nil {
			warn(msg)
		}
	}
	return c, nil
}

// readPart adds the entries of the part at path. When the part fails a check it adds nothing
// and returns what is wrong as damaged; err is for a file that cannot be read or a width that
// disagrees with the other parts'.
func (c *FeatureCache) readPart(path string) (damaged string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("train: feature cache: %w", err)
	}
	if len(b) >= len(FeatureCacheMagic) && string(b[:len(FeatureCacheMagic)]) == "DMLKFC1\n" {
		return "written by an older dmlkit without a checksum", nil
	}
	if len(b) < len(FeatureCacheMagic)+8+sha256.Size || string(b[:len(FeatureCacheMagic)]) != FeatureCacheMagic {
		return "not a feature-cache part", nil
	}
	body, stored := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	b = body[len(FeatureCacheMagic):]
	f, n := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	if f <= 0 || len(b) != n*32+n*f*4 {
		return fmt.Sprintf("%d bytes for %d features of width %d", len(b), n, f), nil
	}
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], stored) {
		return fmt.Sprintf("checksum mismatch: sha256 of its first %d bytes (header, digests, values) %x, stored %x", len(body), sum, stored), nil
	}
	if c.f != 0 && c.f != f {
		return "", fmt.Errorf("train: feature cache: %s: feature width %d, other parts %d (delete the directory to recompute it)", path, f, c.f)
	}
	c.f = f
	vals := b[n*32:]
	for i := 0; i < n; i++ {
		var k [32]byte
		copy(k[:], b[i*32:])
		v := make([]float32, f)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(vals[(i*f+j)*4:]))
		}
		c.m[k] = v
	}
	return "", nil
}

// Add stores features [len(keys), F] as a new part.
func (c *FeatureCache) Add(keys [][32]byte, feats []float32, f int) error {
	if len(keys) == 0 {
		return nil
	}
	if c.f != 0 && c.f != f {
		return fmt.Errorf("train: feature cache %s: feature width %d, cached %d", c.dir, f, c.f)
	}
	c.f = f
	var buf bytes.Buffer
	buf.WriteString(FeatureCacheMagic)
	var u [4]byte
	binary.LittleEndian.PutUint32(u[:], uint32(f))
	buf.Write(u[:])
	binary.LittleEndian.PutUint32(u[:], uint32(len(keys)))
	buf.Write(u[:])
	h := sha256.New()
	for _, k := range keys {
		buf.Write(k[:])
		h.Write(k[:])
	}
	for _, v := range feats[:len(keys)*f] {
		binary.LittleEndian.PutUint32(u[:], math.Float32bits(v))
		buf.Write(u[:])
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("train: feature cache: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	buf.Write(sum[:])
	name := filepath.Join(c.dir, "part-"+hex.EncodeToString(h.Sum(nil))[:16]+".bin")
	if err := atomicfile.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train: feature cache: %w", err)
	}
	for i, k := range keys {
		c.m[k] = append([]float32(nil), feats[i*f:(i+1)*f]...)
	}
	return nil
}

// InputDigest is the SHA-256 of input i of s: of its uint8 pixels for image datasets, of its
// float32 values otherwise (buf holds at least one input's floats).
func InputDigest(s Set, i int, buf []float32) [32]byte {
	switch v := s.(type) {
	case ImageSet:
		return sha256.Sum256(v.Image(i))
	case *ClassSubset:
		return InputDigest(v.Base(), v.Index(i), buf)
	}
	h, w, c := s.Dims()
	x := buf[:h*w*c]
	s.Fill([]int{i}, x)
	b := make([]byte, 4*len(x))
	for j, f := range x {
		binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
	}
	return sha256.Sum256(b)
}

// CutMaps are the cached maps [H', W', C'] in front of a model.trainable_tail backbone's tail,
// one per input (row-major in Features.X, F = H'·W'·C'), given to the model as [B, H', W', C']
// ([models.Config.TailOnly]).
type CutMaps struct {
	*Features
	H, W, C int
}

func (m *CutMaps) Dims() (int, int, int) { return m.H, m.W, m.C }

// FrozenStage is the last stage of a run's data preparation with a fixed backbone part
// (model.freeze_backbone, model.trainable_tail): it replaces every set by what that part
// computes from its inputs, through the on-disk [FeatureCache]. Each input's digest
// ([InputDigest]) is looked up in Cache; the missing ones (each distinct digest once) are
// computed in batches of Batch by the function Extractor builds (called only when some input is
// missing; it is given Batch inputs, the first n real and the rest zero, and returns at least
// n·F features and F) and added to the cache in parts of about 4,096 inputs. Each set becomes
// [Features] or, with Cut = [H', W', C'], [CutMaps], with its labels and coarse labels. This
// package knows nothing of the backbone: the trainer supplies the cache (whose directory is the
// backbone's key) and the extractor.
type FrozenStage struct {
	Field     string // the option named in errors
	Cache     *FeatureCache
	Batch     int
	Cut       []int
	Extractor func() (func(in []float32, n int) ([]float32, int, error), error)
	// Progress, when not nil, is told the inputs computed so far after every batch.
	Progress func(done, total int)
}

// Apply runs the stage on p (the sets are not modified); ctx is checked before every batch.
func (st *FrozenStage) Apply(ctx context.Context, p *PreparedSets) (*PreparedSets, error) {
	field, cache, cut := st.Field, st.Cache, st.Cut
	h, w, c := p.Train.Dims()
	named := []struct {
		name string
		s    Set
	}{{"train", p.Train}, {"val", p.Val}, {"test", p.Test}}
	// Digests of every input, and the inputs still to compute (each distinct digest once).
	buf := make([]float32, h*w*c)
	digests := make([][][32]byte, len(named))
	type ref struct{ set, i int }
	var todo []ref
	queued := map[[32]byte]bool{}
	for si, p := range named {
		if p.s == nil {
			continue
		}
		digests[si] = make([][32]byte, p.s.Len())
		for i := range digests[si] {
			d := InputDigest(p.s, i, buf)
			digests[si][i] = d
			if _, ok := cache.m[d]; !ok && !queued[d] {
				queued[d] = true
				todo = append(todo, ref{si, i})
			}
		}
	}
	if len(todo) > 0 {
		extract, err := st.Extractor()
		if err != nil {
			return nil, err
		}
		size := h * w * c
		in := make([]float32, st.Batch*size)
		// Parts of about 4,096 images: an interrupted extraction keeps what it wrote.
		const part = 4096
		var keys [][32]byte
		var feats []float32
		f := 0
		for start := 0; start < len(todo); start += st.Batch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m := min(st.Batch, len(todo)-start)
			clear(in)
			for j := 0; j < m; j++ {
				r := todo[start+j]
				named[r.set].s.Fill([]int{r.i}, in[j*size:(j+1)*size])
			}
			out, width, err := extract(in, m)
			if err != nil {
				return nil, err
			}
			f = width
			if cut != nil && f != cut[0]*cut[1]*cut[2] {
				return nil, fmt.Errorf("train: %s: the backbone's prefix gives %d values per image, want %v", field, f, cut)
			}
			feats = append(feats, out[:m*f]...)
			for j := 0; j < m; j++ {
				r := todo[start+j]
				keys = append(keys, digests[r.set][r.i])
			}
			if len(keys) >= part || start+m == len(todo) {
				if err := cache.Add(keys, feats, f); err != nil {
					return nil, err
				}
				keys, feats = keys[:0], feats[:0]
			}
			if st.Progress != nil {
				st.Progress(start+m, len(todo))
			}
		}
	}
	out := &PreparedSets{Corruptions: p.Corruptions, ValClasses: p.ValClasses}
	for si, p := range named {
		if p.s == nil {
			continue
		}
		n := p.s.Len()
		fs := &Features{N: n, F: cache.f, X: make([]float32, 0, n*cache.f), Label: append([]int32(nil), p.s.Labels()...)}
		if co := p.s.Coarse(); co != nil {
			fs.Super = append([]int32(nil), co...)
		}
		for i := 0; i < n; i++ {
			v, ok := cache.m[digests[si][i]]
			if !ok {
				return nil, fmt.Errorf("train: %s: %s input %d has no cached features", field, p.name, i)
			}
			fs.X = append(fs.X, v...)
		}
		var set Set = fs
		if cut != nil {
			set = &CutMaps{Features: fs, H: cut[0], W: cut[1], C: cut[2]}
		}
		switch p.name {
		case "train":
			out.Train = set
		case "val":
			out.Val = set
		default:
			out.Test = set
		}
	}
	return out, nil
}

// Dir is the cache's directory, and Width the feature width of its entries (0: none yet).
func (c *FeatureCache) Dir() string { return c.dir }
func (c *FeatureCache) Width() int  { return c.f }
