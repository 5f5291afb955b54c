package data

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data/internal/datatest"
)

// omniglotRoot returns the shared Omniglot copy or skips the test.
func omniglotRoot(t testing.TB) string {
	t.Helper()
	root, err := FindOmniglot("")
	if err != nil {
		t.Skipf("Omniglot not available: %v", err)
	}
	return root
}

// TestOmniglotCounts checks the published sizes: 19,280 / 13,180 images, 964 / 659 classes,
// 20 drawings per class, disjoint labels, and that the ink fraction survives the resize (the byte
// trap: reading 0 as background would give ~92% ink instead of the documented 7.8% / 8.4%).
func TestOmniglotCounts(t *testing.T) {
	root := omniglotRoot(t)
	s, err := Omniglot(OmniglotOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set       *Images
		n, k      int
		lo, hi    int32
		inkFrac   float64
		inkFracTo float64
	}{
		// Ink fractions from the data README (7.8% background, 8.4% evaluation). Area averaging
		// preserves total ink up to rounding each output pixel to 1/255, so the mean of the 28×28
		// pixels / 255 must agree to well under 0.005.
		{s.Train, 19280, 964, 0, 963, 0.078, 0.005},
		{s.Test, 13180, 659, 964, 1622, 0.084, 0.005},
	} {
		if err := c.set.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.set.N != c.n || c.set.NumClasses() != c.k || c.set.H != 28 || c.set.W != 28 || c.set.C != 1 {
			t.Errorf("%s: N=%d classes=%d %dx%dx%d, want N=%d classes=%d 28x28x1", c.set.Name, c.set.N, c.set.NumClasses(), c.set.H, c.set.W, c.set.C, c.n, c.k)
		}
		cls := c.set.Classes()
		if cls[0] != c.lo || cls[len(cls)-1] != c.hi {
			t.Errorf("%s: labels %d..%d, want %d..%d", c.set.Name, cls[0], cls[len(cls)-1], c.lo, c.hi)
		}
		count := map[int32]int{}
		for _, l := range c.set.Labels {
			count[l]++
		}
		for l, n := range count {
			if n != 20 {
				t.Fatalf("%s: class %d has %d images, want 20", c.set.Name, l, n)
			}
		}
		var sum float64
		for _, p := range c.set.Pix {
			sum += float64(p)
		}
		frac := sum / 255 / float64(len(c.set.Pix))
		if math.Abs(frac-c.inkFrac) > c.inkFracTo {
			t.Errorf("%s: ink fraction %.4f, want %.3f±%.3f (byte trap?)", c.set.Name, frac, c.inkFrac, c.inkFracTo)
		}
	}
	// Held-out background characters: 100 classes → 2,000 images move to Val, disjoint from Train.
	v, err := Omniglot(OmniglotOptions{Root: root, ValClasses: 100, ValSeed: 1, Alphabets: true})
	if err != nil {
		t.Fatal(err)
	}
	if v.Val.N != 2000 || v.Val.NumClasses() != 100 || v.Train.N != 17280 || len(v.Val.Coarse) != 2000 {
		t.Errorf("val split: train %d, val %d images / %d classes", v.Train.N, v.Val.N, v.Val.NumClasses())
	}
	for _, a := range v.Test.Coarse {
		if a < OmniglotBackgroundAlphabets {
			t.Fatal("evaluation image with a background alphabet")
		}
	}
	if s.Train.ClassNames[0] != "char0001" || s.Test.ClassNames[s.Test.Labels[0]] != "char0965" {
		t.Errorf("class names: %q, %q", s.Train.ClassNames[0], s.Test.ClassNames[s.Test.Labels[0]])
	}
}

// TestAreaResizer checks the box filter against hand-worked cases.
func TestAreaResizer(t *testing.T) {
	// 4→2: each output is the plain mean of a 2×2 block.
	src := []uint8{
		0, 255, 0, 0,
		255, 255, 0, 0,
		0, 0, 100, 100,
		0, 0, 100, 101,
	}
	dst := make([]uint8, 4)
	newAreaResizer(4, 2).resize(src, dst)
	// means: (0+255+255+255)/4=191.25→191; 0; 0; (100+100+100+101)/4=100.25→100.
	want := []uint8{191, 0, 0, 100}
	for i := range want {
		if dst[i] != want[i] {
			t.Fatalf("4→2: got %v, want %v", dst, want)
		}
	}
	// 3→2: s = 1.5; output 0 covers input [0,1.5): weights 1/1.5 and 0.5/1.5 = 2/3, 1/3.
	// A single ink pixel at (1,1) (255) contributes to all four outputs with weight (1/3)·(1/3)
	// = 1/9 → 255/9 = 28.33 → 28.
	src = []uint8{0, 0, 0, 0, 255, 0, 0, 0, 0}
	newAreaResizer(3, 2).resize(src, dst)
	for i := range dst {
		if dst[i] != 28 {
			t.Fatalf("3→2: got %v, want all 28", dst)
		}
	}
}

// TestOmniglotErrors checks that damaged inputs give a clear error naming the file, not a panic.
func TestOmniglotErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := FindOmniglot(dir)
	if !errors.Is(err, ErrMissing) {
		t.Errorf("empty dir: got %v, want ErrMissing", err)
	}
	_, err = LoadOmniglotFile(filepath.Join(dir, "nope.npz"), 28, 0)
	if !errors.Is(err, ErrMissing) {
		t.Errorf("missing file: got %v", err)
	}
	bad := filepath.Join(dir, "bad.npz")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	_, err = LoadOmniglotFile(bad, 28, 0)
	if !errors.Is(err, ErrFormat) {
		t.Errorf("bad zip: got %v", err)
	}
	// A tiny hand-built archive: 1 character, labels OK, images truncated after 3 drawings.
	p := filepath.Join(dir, "trunc.npz")
	datatest.WriteOmniglotNPZ(t, p, 1, 3, 0)
	_, err = LoadOmniglotFile(p, 28, 0)
	if !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated images: got %v", err)
	} else {
		t.Logf("truncated: %v", err)
	}
	// A stray byte value (the loader must not silently binarise).
	p = filepath.Join(dir, "stray.npz")
	datatest.WriteOmniglotNPZ(t, p, 1, 20, 7)
	_, err = LoadOmniglotFile(p, 28, 0)
	if !errors.Is(err, ErrFormat) {
		t.Errorf("stray byte: got %v", err)
	}
	// A good tiny archive: 2 characters, one ink pixel at the top-left corner of drawing 0.
	p = filepath.Join(dir, "good.npz")
	datatest.WriteOmniglotNPZ(t, p, 2, 40, 0)
	im, err := LoadOmniglotFile(p, 105, 5)
	if err != nil {
		t.Fatal(err)
	}
	if im.N != 40 || im.Labels[0] != 5 || im.Labels[39] != 6 || im.Pix[0] != 255 || im.Pix[1] != 0 {
		t.Errorf("good archive: N=%d labels %d,%d pix %d,%d", im.N, im.Labels[0], im.Labels[39], im.Pix[0], im.Pix[1])
	}
}

// TestOmniglotAlphabetTable verifies the alphabet table against the published alphabet sizes,
// keyed independently by the official brendenlake/omniglot folder names.
func TestOmniglotAlphabetTable(t *testing.T) {
	published := map[string]int{ // images_background
		"Alphabet_of_the_Magi": 20, "Anglo-Saxon_Futhorc": 29, "Arcadian": 26, "Armenian": 41,
		"Asomtavruli_(Georgian)": 40, "Balinese": 24, "Bengali": 46,
		"Blackfoot_(Canadian_Aboriginal_Syllabics)": 14, "Braille": 26, "Burmese_(Myanmar)": 34,
		"Cyrillic": 33, "Early_Aramaic": 22, "Futurama": 26, "Grantha": 43, "Greek": 24,
		"Gujarati": 48, "Hebrew": 22, "Inuktitut_(Canadian_Aboriginal_Syllabics)": 16,
		"Japanese_(hiragana)": 52, "Japanese_(katakana)": 47, "Korean": 40, "Latin": 26,
		"Malay_(Jawi_-_Arabic)": 40, "Mkhedruli_(Georgian)": 41, "N_Ko": 33,
		"Ojibwe_(Canadian_Aboriginal_Syllabics)": 14, "Sanskrit": 42, "Syriac_(Estrangelo)": 23,
		"Tagalog": 17, "Tifinagh": 55,
		// images_evaluation
		"Angelic": 20, "Atemayar_Qelisayer": 26, "Atlantean": 26, "Aurek-Besh": 26, "Avesta": 26,
		"Ge_ez": 26, "Glagolitic": 45, "Gurmukhi": 45, "Kannada": 41, "Keble": 26,
		"Malayalam": 47, "Manipuri": 40, "Mongolian": 30, "Old_Church_Slavonic_(Cyrillic)": 45,
		"Oriya": 46, "Sylheti": 28, "Syriac_(Serto)": 23, "Tengwar": 25, "Tibetan": 42, "ULOG": 26,
	}
	// Map table names to folder names by normalising punctuation.
	norm := func(s string) string {
		out := []rune{}
		for _, r := range s {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				if r >= 'A' && r <= 'Z' {
					r += 'a' - 'A'
				}
				out = append(out, r)
			}
		}
		return string(out)
	}
	pub := map[string]int{}
	for k, v := range published {
		pub[norm(k)] = v
	}
	// "Malay (Jawi-Arabic)" vs folder "Malay_(Jawi_-_Arabic)" normalise equal; N'Ko vs N_Ko too.
	used := map[string]bool{}
	bg, ev := 0, 0
	for a, s := range omniglotAlphabetSizes {
		n, ok := pub[norm(s.Name)]
		if !ok {
			t.Errorf("alphabet %q not among the published folder names", s.Name)
			continue
		}
		used[norm(s.Name)] = true
		if n != s.Count {
			t.Errorf("alphabet %q: table has %d characters, published %d", s.Name, s.Count, n)
		}
		if a < OmniglotBackgroundAlphabets {
			bg += s.Count
		} else {
			ev += s.Count
		}
	}
	if len(used) != 50 || bg != 964 || ev != 659 {
		t.Errorf("table: %d distinct alphabets, background %d, evaluation %d; want 50, 964, 659", len(used), bg, ev)
	}
	// Spot rows from the notes' visual check.
	for _, c := range []struct {
		label int
		name  string
	}{{0, "Arcadian"}, {191, "Braille"}, {216, "Braille"}, {217, "Cyrillic"}, {249, "Cyrillic"},
		{393, "Greek"}, {416, "Greek"}, {487, "Japanese (Hiragana)"}, {642, "Korean"}, {682, "Latin"},
		{707, "Latin"}, {963, "Tifinagh"}, {964, "Angelic"}, {964 + 591, "Tibetan"}, {964 + 632, "Tibetan"},
		{1622, "ULOG"}} {
		if got := OmniglotAlphabetName(OmniglotAlphabet(c.label)); got != c.name {
			t.Errorf("label %d: alphabet %q, want %q", c.label, got, c.name)
		}
	}
	if OmniglotAlphabet(1623) != -1 || OmniglotAlphabet(-1) != -1 {
		t.Error("out-of-range labels must map to -1")
	}
}

// TestOmniglotAlphabetPixels verifies the alphabet table on the pixels, in two independent ways.
//
// Drawer signatures (every boundary): within an alphabet, drawing YY of every character was made
// by the same person, and people differ in how large, where and with how much ink they draw. For
// each character we take five per-drawing features (ink pixels, bounding-box width and height,
// centroid x and y), z-score each over the 20 drawings, and concatenate them (100 numbers). An
// alphabet's signature is the sum of its characters' vectors. At each of the 48 boundaries the
// first character of the later alphabet must correlate better with its own alphabet's signature
// (leaving itself out) than with the previous alphabet's, and the last character of the earlier
// alphabet the other way round. A table shifted by any number of rows at a boundary puts a
// character of one alphabet into the other and should fail the check; the test shifts every
// boundary by one row each way and requires each shift to be caught. On the real table all 96
// margins are positive (smallest ≈ 0.08, typically 0.3–0.9).
//
// Braille (one alphabet, different evidence): Braille glyphs are drawn as separate dots, so the
// largest ink component of each drawing is small (median bounding-box extent ≤ 7 px at 105×105),
// while the neighbouring alphabets' glyphs are single strokes (≥ 51 px).
func TestOmniglotAlphabetPixels(t *testing.T) {
	root := omniglotRoot(t)
	counts := make([]int, len(omniglotAlphabetSizes))
	for i, a := range omniglotAlphabetSizes {
		counts[i] = a.Count
	}
	for _, part := range []struct {
		file      string
		alphabets []int
	}{{OmniglotBackgroundFile, counts[:OmniglotBackgroundAlphabets]}, {OmniglotEvaluationFile, counts[OmniglotBackgroundAlphabets:]}} {
		im, err := LoadOmniglotFile(filepath.Join(root, part.file), 105, 0)
		if err != nil {
			t.Fatal(err)
		}
		feat := drawerFeatures(im)
		margins := boundaryMargins(feat, part.alphabets)
		worst := math.Inf(1)
		for k, m := range margins {
			worst = min(worst, m)
			if m <= 0 {
				t.Errorf("%s: boundary check %d (alphabet %d, first/last) fails: margin %.3f", part.file, k, k/2+1, m)
			}
		}
		t.Logf("%s: %d boundary checks, smallest margin %.3f", part.file, len(margins), worst)
		// Negative controls: move each boundary by one row in either direction; the check at that
		// boundary must fail.
		missed := 0
		for k := 0; k+1 < len(part.alphabets); k++ {
			for _, d := range []int{-1, 1} {
				shifted := append([]int(nil), part.alphabets...)
				shifted[k] += d
				shifted[k+1] -= d
				if m := boundaryMargins(feat, shifted); m[2*k] > 0 && m[2*k+1] > 0 {
					missed++
				}
			}
		}
		t.Logf("%s: %d of %d one-row shifts of a boundary not detected", part.file, missed, 2*(len(part.alphabets)-1))
		if missed > 0 {
			t.Errorf("%s: the boundary check misses %d one-row shifts", part.file, missed)
		}
		if part.file == OmniglotBackgroundFile {
			brailleCheck(t, im)
		}
	}
}

// drawerFeatures returns per character the z-scored per-drawing features described above.
func drawerFeatures(im *Images) [][]float64 {
	nc := im.N / 20
	feat := make([][]float64, nc)
	for c := 0; c < nc; c++ {
		raw := make([][]float64, 5)
		for d := 0; d < 20; d++ {
			var n, sx, sy float64
			x0, x1, y0, y1 := im.W, -1, im.H, -1
			for p, v := range im.Image(c*20 + d) {
				if v > 127 {
					y, x := p/im.W, p%im.W
					n++
					sx += float64(x)
					sy += float64(y)
					x0, x1, y0, y1 = min(x0, x), max(x1, x), min(y0, y), max(y1, y)
				}
			}
			n = max(n, 1)
			for f, v := range []float64{n, float64(x1 - x0), float64(y1 - y0), sx / n, sy / n} {
				raw[f] = append(raw[f], v)
			}
		}
		for _, v := range raw {
			var m, ss float64
			for _, x := range v {
				m += x / 20
			}
			for _, x := range v {
				ss += (x - m) * (x - m) / 20
			}
			sd := math.Sqrt(ss) + 1e-9
			for _, x := range v {
				feat[c] = append(feat[c], (x-m)/sd)
			}
		}
	}
	return feat
}

// boundaryMargins returns, for each boundary between consecutive alphabets of sizes counts,
// two margins: corr(first of B, sig(B∖first)) − corr(first of B, sig(A)) and
// corr(last of A, sig(A∖last)) − corr(last of A, sig(B)).
func boundaryMargins(feat [][]float64, counts []int) []float64 {
	starts := []int{0}
	for _, n := range counts {
		starts = append(starts, starts[len(starts)-1]+n)
	}
	sig := func(lo, hi, excl int) []float64 {
		s := make([]float64, len(feat[0]))
		for c := lo; c < hi; c++ {
			if c != excl {
				for i, v := range feat[c] {
					s[i] += v
				}
			}
		}
		return s
	}
	corr := func(a, b []float64) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab += a[i] * b[i]
			aa += a[i] * a[i]
			bb += b[i] * b[i]
		}
		return ab / math.Sqrt(aa*bb+1e-12)
	}
	var out []float64
	for k := 1; k+1 < len(starts); k++ {
		aLo, b, bHi := starts[k-1], starts[k], starts[k+1]
		out = append(out,
			corr(feat[b], sig(b, bHi, b))-corr(feat[b], sig(aLo, b, -1)),
			corr(feat[b-1], sig(aLo, b, b-1))-corr(feat[b-1], sig(b, bHi, -1)))
	}
	return out
}

// brailleCheck separates Braille (rows 191–216) from its neighbours by the size of the largest
// ink component.
func brailleCheck(t *testing.T, im *Images) {
	score := func(row int) float64 { // median over the 20 drawings
		var n []float64
		for d := 0; d < 20; d++ {
			n = append(n, float64(largestComponentExtent(im.Image(row*20+d), 105, 105)))
		}
		sort.Float64s(n)
		return (n[9] + n[10]) / 2
	}
	lo, hi := 1e9, 0.0 // neighbours' min, Braille's max
	for r := 177; r < 250; r++ {
		if sc := score(r); OmniglotAlphabetName(OmniglotAlphabet(r)) == "Braille" {
			hi = max(hi, sc)
		} else {
			lo = min(lo, sc)
		}
	}
	t.Logf("Braille: largest-component extent ≤ %.1f px; rows 177–190 and 217–249 ≥ %.1f px", hi, lo)
	if hi >= lo {
		t.Errorf("Braille rows 191–216 not separated from rows 177–190 / 217–249: %.1f >= %.1f", hi, lo)
	}
}

// largestComponentExtent returns max(height, width) of the bounding box of the largest
// 8-connected component of pixels >= 128.
func largestComponentExtent(pix []uint8, h, w int) int {
	seen := make([]bool, len(pix))
	var stack []int
	best, bestExt := 0, 0
	for s := range pix {
		if pix[s] < 128 || seen[s] {
			continue
		}
		size := 0
		y0, y1, x0, x1 := h, -1, w, -1
		seen[s] = true
		stack = append(stack[:0], s)
		for len(stack) > 0 {
			p := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			size++
			y, x := p/w, p%w
			y0, y1, x0, x1 = min(y0, y), max(y1, y), min(x0, x), max(x1, x)
			for dy := -1; dy <= 1; dy++ {
				for dx := -1; dx <= 1; dx++ {
					yy, xx := y+dy, x+dx
					if yy < 0 || yy >= h || xx < 0 || xx >= w {
						continue
					}
					q := yy*w + xx
					if pix[q] >= 128 && !seen[q] {
						seen[q] = true
						stack = append(stack, q)
					}
				}
			}
		}
		if size > best {
			best, bestExt = size, max(y1-y0+1, x1-x0+1)
		}
	}
	return bestExt
}

// TestOmniglotFileShared: a second load of the same file content with the same arguments is a
// copy of the first (a change to one reaches no other), other arguments or another content load
// afresh, and a sidecar that no longer matches is still an error.
func TestOmniglotFileShared(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "good.npz")
	datatest.WriteOmniglotNPZ(t, p, 2, 40, 0)
	a, err := loadOmniglotFileShared(p, 28, 5)
	if err != nil {
		t.Fatal(err)
	}
	a.Pix[0], a.Labels[0], a.Name = 7, 99, "changed"
	b, err := loadOmniglotFileShared(p, 28, 5)
	if err != nil {
		t.Fatal(err)
	}
	// As in TestOmniglotErrors: 40 drawings, labels 5 and 6, one ink pixel at the top left, which
	// at 28 px covers (1/3.75)² of the first pixel: 255/14.0625 = 18.1 → 18.
	if b.N != 40 || b.Labels[0] != 5 || b.Labels[39] != 6 || b.Pix[0] != 18 || b.Pix[1] != 0 || b.Name != "omniglot" {
		t.Errorf("second load: N=%d labels %d,%d pix %d,%d name %q, want the file's images untouched by the first caller's changes",
			b.N, b.Labels[0], b.Labels[39], b.Pix[0], b.Pix[1], b.Name)
	}
	c, err := loadOmniglotFileShared(p, 28, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Labels[0] != 0 || c.Labels[39] != 1 {
		t.Errorf("label offset 0: labels %d,%d, want 0,1", c.Labels[0], c.Labels[39])
	}
	// The same path with another content (3 characters now).
	datatest.WriteOmniglotNPZ(t, p, 3, 60, 0)
	d, err := loadOmniglotFileShared(p, 28, 5)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 60 || d.Labels[59] != 7 {
		t.Errorf("rewritten file: N=%d last label %d, want 60 and 7", d.N, d.Labels[59])
	}
	if err := os.WriteFile(p+".sha256", []byte("0000000000000000000000000000000000000000000000000000000000000000  good.npz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadOmniglotFileShared(p, 28, 5); err == nil {
		t.Error("a sidecar that does not match: no error")
	}
}
