package prepare

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// The fixture writers of package data live in its _test files and cannot be imported, so the
// on-disk layouts are written again here, each with tiny JPEGs.

// fixtureJPEG encodes a w×h JPEG with smooth random colours (seeded by v).
func fixtureJPEG(t *testing.T, path string, w, h, v int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(v), 3))
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	a, b, c := r.IntN(200), r.IntN(200), r.IntN(200)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := (y*w + x) * 4
			im.Pix[p], im.Pix[p+1], im.Pix[p+2], im.Pix[p+3] = uint8(a+2*x), uint8(b+3*y), uint8(c+x+y), 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, im, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, path, buf.Bytes())
}

// gradientPNG writes a lossless w×h PNG with R = 2x, G = 2y + 10, B = x + y.
func gradientPNG(t *testing.T, path string, w, h int) {
	t.Helper()
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := (y*w + x) * 4
			im.Pix[p], im.Pix[p+1], im.Pix[p+2], im.Pix[p+3] = uint8(2*x), uint8(2*y+10), uint8(x+y), 255
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, im); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, path, buf.Bytes())
}

func writeFixture(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeLines(t *testing.T, path string, lines ...string) {
	writeFixture(t, path, []byte(strings.Join(lines, "\n")+"\n"))
}

// cubTree writes CUB_200_2011-layout files under root: per class `per` images of 24×20; the
// first half of each class's images is marked as train in train_test_split.txt.
func cubTree(t *testing.T, root string, classes []int, per int) {
	var im, lab, sp []string
	id := 0
	for _, c := range classes {
		for k := 0; k < per; k++ {
			id++
			rel := fmt.Sprintf("%03d.Bird/img_%d.jpg", c, id)
			fixtureJPEG(t, filepath.Join(root, "images", rel), 24, 20, id)
			im = append(im, fmt.Sprintf("%d %s", id, rel))
			lab = append(lab, fmt.Sprintf("%d %d", id, c))
			tr := 0
			if k < per/2 {
				tr = 1
			}
			sp = append(sp, fmt.Sprintf("%d %d", id, tr))
		}
	}
	writeLines(t, filepath.Join(root, "images.txt"), im...)
	writeLines(t, filepath.Join(root, "image_class_labels.txt"), lab...)
	writeLines(t, filepath.Join(root, "train_test_split.txt"), sp...)
}

// carsTree writes the Cars196 CSV layout: anno_train.csv lists the even images, anno_test.csv
// the odd ones (the DML split ignores which file an image is in).
func carsTree(t *testing.T, root string, classes []int, per int) {
	tr, te := []string{"file,x1,y1,x2,y2,class"}, []string{"file,x1,y1,x2,y2,class"}
	n := 0
	for _, c := range classes {
		for k := 0; k < per; k++ {
			n++
			name := fmt.Sprintf("%05d.jpg", n)
			dir, list := "cars_train", &tr
			if n%2 == 1 {
				dir, list = "cars_test", &te
			}
			fixtureJPEG(t, filepath.Join(root, dir, name), 24, 20, n)
			*list = append(*list, fmt.Sprintf("%s,1,1,20,16,%d", name, c))
		}
	}
	writeLines(t, filepath.Join(root, "anno_train.csv"), tr...)
	writeLines(t, filepath.Join(root, "anno_test.csv"), te...)
}

// sopTree writes Ebay_train.txt (classes train, super-class 1 + class%2) and Ebay_test.txt.
func sopTree(t *testing.T, root string, train, test []int, per int) {
	n := 0
	for _, part := range []struct {
		file    string
		classes []int
	}{{"Ebay_train.txt", train}, {"Ebay_test.txt", test}} {
		lines := []string{"image_id class_id super_class_id path"}
		for _, c := range part.classes {
			for k := 0; k < per; k++ {
				n++
				rel := fmt.Sprintf("bicycle_final/%d_%d.JPG", c, k)
				fixtureJPEG(t, filepath.Join(root, rel), 24, 20, n)
				lines = append(lines, fmt.Sprintf("%d %d %d %s", n, c, 1+c%2, rel))
			}
		}
		writeLines(t, filepath.Join(root, part.file), lines...)
	}
}

// inatTree writes the Smooth-AP split lists under Inat_dataset_splits/.
func inatTree(t *testing.T, root string, train, test []int, per int) {
	n := 0
	for _, part := range []struct {
		file string
		cats []int
	}{{"Inaturalist_train_set1.txt", train}, {"Inaturalist_test_set1.txt", test}} {
		var lines []string
		for _, c := range part.cats {
			for k := 0; k < per; k++ {
				n++
				sup := []string{"Aves", "Plantae"}[c%2]
				rel := fmt.Sprintf("train_val2018/%s/%d/%x.jpg", sup, c, n)
				fixtureJPEG(t, filepath.Join(root, rel), 24, 20, n)
				lines = append(lines, rel)
			}
		}
		writeLines(t, filepath.Join(root, "Inat_dataset_splits", part.file), lines...)
	}
}

// inshopTree writes Eval/list_eval_partition.txt: train items, then each test item with one
// query and per−1 gallery images.
func inshopTree(t *testing.T, root string, train, test []int, per int) {
	var rows []string
	n := 0
	add := func(item, k int, status string) {
		n++
		rel := fmt.Sprintf("img/WOMEN/Dresses/id_%08d/%02d_1_front.jpg", item, k)
		fixtureJPEG(t, filepath.Join(root, rel), 24, 20, n)
		rows = append(rows, fmt.Sprintf("%s id_%08d %s", rel, item, status))
	}
	for _, it := range train {
		for k := 0; k < per; k++ {
			add(it, k, "train")
		}
	}
	for _, it := range test {
		for k := 0; k < per; k++ {
			st := "gallery"
			if k == 0 {
				st = "query"
			}
			add(it, k, st)
		}
	}
	lines := append([]string{fmt.Sprint(len(rows)), "image_name item_id evaluation_status"}, rows...)
	writeLines(t, filepath.Join(root, "Eval", "list_eval_partition.txt"), lines...)
}

// marketTree writes Market-1501's three folders: per training id `per` images on cameras 1, 2,
// …; per test id one query (camera 1) and per−1 gallery images (cameras 2, …); plus a junk (−1)
// and a distractor (0000) image in the gallery, which the pooled test set leaves out.
func marketTree(t *testing.T, root string, train, test []int, per int) {
	n := 0
	img := func(dir string, pid, cam int) {
		n++
		name := fmt.Sprintf("%04d_c%ds1_%06d_01.jpg", pid, cam, n)
		if pid < 0 {
			name = fmt.Sprintf("-1_c%ds1_%06d_01.jpg", cam, n)
		}
		fixtureJPEG(t, filepath.Join(root, dir, name), 24, 20, n)
	}
	for _, id := range train {
		for k := 0; k < per; k++ {
			img("bounding_box_train", id, k+1)
		}
	}
	for _, id := range test {
		img("query", id, 1)
		for k := 1; k < per; k++ {
			img("bounding_box_test", id, k+1)
		}
	}
	img("bounding_box_test", -1, 3)
	img("bounding_box_test", 0, 4)
}

// vehicleTree writes train_test_split/train_list.txt and test_list_800.txt.
func vehicleTree(t *testing.T, root string, train, test []int, per int) {
	n := 0
	for _, part := range []struct {
		file string
		ids  []int
	}{{"train_list.txt", train}, {"test_list_800.txt", test}} {
		var lines []string
		for _, v := range part.ids {
			for k := 0; k < per; k++ {
				n++
				name := fmt.Sprintf("%07d", n)
				fixtureJPEG(t, filepath.Join(root, "image", name+".jpg"), 24, 20, n)
				lines = append(lines, fmt.Sprintf("%s %d", name, v))
			}
		}
		writeLines(t, filepath.Join(root, "train_test_split", part.file), lines...)
	}
}

// loadSets loads a registered set dataset.
func loadSets(t *testing.T, name string, opts map[string]any) *data.SetSplit {
	t.Helper()
	fn, ok := lookupSetDataset(name)
	if !ok {
		t.Fatalf("%s is not registered", name)
	}
	s, err := fn(opts, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

func labelCounts(ls []int32) map[int32]int {
	m := map[int32]int{}
	for _, l := range ls {
		m[l]++
	}
	return m
}

// TestImageDatasetSplits loads each benchmark layout and checks the class split of its protocol:
// how many images and classes each side gets, and the dense renumbering (training classes
// 0…K−1 in label order, then the test classes).
func TestImageDatasetSplits(t *testing.T) {
	small := map[string]any{"size": 8, "resize": 10}
	with := func(root string, kv ...any) map[string]any {
		m := map[string]any{"root": root}
		for k, v := range small {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cub := t.TempDir()
	// Classes 1, 2, 100 are ≤ 100 (train); 101, 150, 200 test. 4 images each.
	cubTree(t, cub, []int{1, 2, 100, 101, 150, 200}, 4)
	cars := t.TempDir()
	carsTree(t, cars, []int{1, 50, 98, 99, 150, 196}, 3) // 1–98 train
	sop := t.TempDir()
	sopTree(t, sop, []int{1, 2, 3}, []int{4, 5}, 2)
	inat := t.TempDir()
	inatTree(t, inat, []int{7477, 12, 300}, []int{5, 8000}, 2)
	inshop := t.TempDir()
	inshopTree(t, inshop, []int{1, 7}, []int{3, 9, 11}, 3)
	veh := t.TempDir()
	vehicleTree(t, veh, []int{40, 4}, []int{9, 2}, 2)
	market := t.TempDir()
	marketTree(t, market, []int{2, 7}, []int{5, 11, 3}, 3)

	for _, c := range []struct {
		name        string
		opts        map[string]any
		trainN      int
		trainLabels map[int32]int // dense label → images
		testN       int
		testLabels  map[int32]int
		coarse      bool
	}{
		// CUB open set: 3 train classes (1, 2, 100 → 0, 1, 2) × 4, 3 test classes (→ 3, 4, 5).
		{"cub", with(cub), 12, map[int32]int{0: 4, 1: 4, 2: 4}, 12, map[int32]int{3: 4, 4: 4, 5: 4}, false},
		// CUB official: the first 2 images of every class train, the rest test; the 6 classes
		// are shared and numbered alike on both sides.
		{"cub", with(cub, "split", "official"), 12, map[int32]int{0: 2, 1: 2, 2: 2, 3: 2, 4: 2, 5: 2}, 12, map[int32]int{0: 2, 1: 2, 2: 2, 3: 2, 4: 2, 5: 2}, false},
		// Cars: classes 1, 50, 98 train, 99, 150, 196 test, whichever CSV lists them.
		{"cars", with(cars), 9, map[int32]int{0: 3, 1: 3, 2: 3}, 9, map[int32]int{3: 3, 4: 3, 5: 3}, false},
		// SOP: Ebay_train / Ebay_test, labels class_id − 1 (identity after renumbering).
		{"sop", with(sop), 6, map[int32]int{0: 2, 1: 2, 2: 2}, 4, map[int32]int{3: 2, 4: 2}, true},
		// iNat: categories 12, 300, 7477 → 0, 1, 2; test 5, 8000 → 3, 4.
		{"inat", with(inat), 6, map[int32]int{0: 2, 1: 2, 2: 2}, 4, map[int32]int{3: 2, 4: 2}, true},
		// In-Shop: test = query + gallery pooled: 3 items × 3 images.
		{"inshop", with(inshop), 6, map[int32]int{0: 3, 1: 3}, 9, map[int32]int{2: 3, 3: 3, 4: 3}, false},
		{"vehicleid", with(veh), 4, map[int32]int{0: 2, 1: 2}, 4, map[int32]int{2: 2, 3: 2}, false},
		// Market-1501: ids 2, 7 train (3 images each); test = query + gallery pooled, 3 ids × 3
		// images (ids 3, 5, 11 → 2, 3, 4), junk and distractor left out.
		{"market1501", with(market), 6, map[int32]int{0: 3, 1: 3}, 9, map[int32]int{2: 3, 3: 3, 4: 3}, false},
	} {
		s := loadSets(t, c.name, c.opts)
		tag := fmt.Sprintf("%s %v", c.name, c.opts["split"])
		if s.Train.Len() != c.trainN || !reflect.DeepEqual(labelCounts(s.Train.Labels()), c.trainLabels) {
			t.Errorf("%s train: %d images, labels %v; want %d, %v", tag, s.Train.Len(), labelCounts(s.Train.Labels()), c.trainN, c.trainLabels)
		}
		if s.Test.Len() != c.testN || !reflect.DeepEqual(labelCounts(s.Test.Labels()), c.testLabels) {
			t.Errorf("%s test: %d images, labels %v; want %d, %v", tag, s.Test.Len(), labelCounts(s.Test.Labels()), c.testN, c.testLabels)
		}
		if (s.Train.Coarse() != nil) != c.coarse {
			t.Errorf("%s: coarse labels %v, want present = %v", tag, s.Train.Coarse(), c.coarse)
		}
		if h, w, ch := s.Train.Dims(); h != 8 || w != 8 || ch != 3 {
			t.Errorf("%s: dims %d×%d×%d, want 8×8×3", tag, h, w, ch)
		}
	}
	// The iNat labels follow the category of each path (category 300 is the second smallest).
	s := loadSets(t, "inat", with(inat))
	for i, l := range s.Train.Labels() {
		p := s.Train.(*FileSet).Path(i)
		want := map[string]int32{"12": 0, "300": 1, "7477": 2}[filepath.Base(filepath.Dir(p))]
		if l != want {
			t.Errorf("inat %s: label %d, want %d", p, l, want)
		}
	}
}

// TestImageDatasetOptionErrors: bad options and missing data are reported by their field, and a
// missing root names the path and data.options.root.
func TestImageDatasetOptionErrors(t *testing.T) {
	cub := t.TempDir()
	cubTree(t, cub, []int{1, 101}, 2)
	missing := filepath.Join(t.TempDir(), "no", "CUB_200_2011")
	for _, c := range []struct {
		name string
		opts map[string]any
		want []string
	}{
		{"cub", map[string]any{"root": missing}, []string{"data.options.root", missing}},
		{"cub", map[string]any{"root": cub, "size": 64, "resize": 32}, []string{"data.options.resize"}},
		{"cub", map[string]any{"root": cub, "sise": 64}, []string{"data.options", "sise"}},
		{"cub", map[string]any{"root": cub, "split": "closed"}, []string{"data.options.split"}},
		{"sop", map[string]any{"root": cub, "split": "official"}, []string{"data.options.split", "not an option of sop"}},
		{"cub", map[string]any{"root": cub, "mean": []any{0.5, 0.5}}, []string{"data.options.mean"}},
		{"cub", map[string]any{"root": cub, "augment": "mixup"}, []string{"data.options.augment"}},
		{"cub", map[string]any{"root": cub, "scale": []any{0.5, 0.1}}, []string{"data.options.scale"}},
		{"cub", map[string]any{"root": cub, "check": "all"}, []string{"data.options.check"}},
		// A root without the lists: the loader's error names the file, prefixed by the option.
		{"sop", map[string]any{"root": cub}, []string{"data.options.root " + cub, "Ebay_train.txt"}},
	} {
		fn, _ := lookupSetDataset(c.name)
		_, err := fn(c.opts, 0)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: error %v, want it to contain %q", c.name, c.opts, err, w)
			}
		}
	}

	// No root: $DMLKIT_DATA/<source> and the fetch directory are tried and named.
	dd, cache := t.TempDir(), t.TempDir()
	t.Setenv("DMLKIT_DATA", dd)
	t.Setenv("DMLKIT_CACHE", cache)
	fn, _ := lookupSetDataset("cars")
	_, err := fn(nil, 0)
	for _, w := range []string{"data.options.root", filepath.Join(dd, "cars196"), filepath.Join(cache, "cars196"), "dmlkit data fetch cars196"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("default root: %v; want %q", err, w)
		}
	}
	// $DMLKIT_DATA/cub holding the extracted CUB_200_2011/ is found and entered.
	cubTree(t, filepath.Join(dd, "cub", "CUB_200_2011"), []int{1, 101}, 2)
	s := loadSets(t, "cub", map[string]any{"size": 8, "resize": 10})
	if s.Train.Len() != 2 || s.Test.Len() != 2 || !strings.HasPrefix(s.Test.(*FileSet).Path(0), filepath.Join(dd, "cub", "CUB_200_2011", "images")) {
		t.Errorf("default root: %d / %d images, first test file %s", s.Train.Len(), s.Test.Len(), s.Test.(*FileSet).Path(0))
	}
}

// normalised is the expected input value of channel c for byte v: (v/255 − mean_c)/std_c.
func normalised(v float64, c int, mean, std []float64) float64 { return (v/255 - mean[c]) / std[c] }

// TestFileSetCentreCrop compares the test-time view of synthetic gradients with values worked
// out by hand. Source pixel (x, y) = (2x, 2y + 10, x + y).
//   - 40×32 image, resize 32: no resampling; the 24-crop starts at ((40−24)/2, (32−24)/2) = (8, 4),
//     so output (u, v) is the source at (u + 8, v + 4).
//   - 80×64 image, resize 32: a 2× reduction to 40×32. Away from the border, output column X
//     averages source columns 2X−1 … 2X+2 with triangle weights ¼, ¾, ¾, ¼ (sum 2), so a linear
//     a·x becomes a·(2X + ½): R = 4X + 1, G = 4Y + 11, B = 2X + 2Y + 1, all integers, so the
//     uint8 rounding is exact. The crop (offset (8, 4)) avoids the border columns 0 and 39.
//
// Tolerance 1e-5: the set computes v·(1/(255·std)) − mean/std in float32 (relative error ~1e-7
// on values below 4).
func TestFileSetCentreCrop(t *testing.T) {
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "a.png"), filepath.Join(dir, "b.png")
	gradientPNG(t, p1, 40, 32)
	gradientPNG(t, p2, 80, 64)
	mean, std := []float64{0.5, 0.4, 0.3}, []float64{0.2, 0.25, 0.3}
	o := ImageOptions{Size: 24, Resize: 32, Mean: mean, Std: std, Workers: 2}
	fs, err := NewFileSet(&data.Files{Name: "grad", Paths: []string{p1, p2}, Labels: []int32{0, 1}}, nil, o, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	dst := make([]float32, 2*n*n*3)
	fs.Fill([]int{0, 1}, dst)
	want := []func(u, v int) [3]float64{
		func(u, v int) [3]float64 {
			x, y := u+8, v+4
			return [3]float64{float64(2 * x), float64(2*y + 10), float64(x + y)}
		},
		func(u, v int) [3]float64 {
			X, Y := u+8, v+4
			return [3]float64{float64(4*X + 1), float64(4*Y + 11), float64(2*X + 2*Y + 1)}
		},
	}
	for img, f := range want {
		bad := 0
		for v := 0; v < n; v++ {
			for u := 0; u < n; u++ {
				px := f(u, v)
				for c := 0; c < 3; c++ {
					got := float64(dst[((img*n+v)*n+u)*3+c])
					if w := normalised(px[c], c, mean, std); math.Abs(got-w) > 1e-5 {
						if bad++; bad < 5 {
							t.Errorf("image %d (%d, %d) channel %d: %v, want %v (byte %v)", img, u, v, c, got, w, px[c])
						}
					}
				}
			}
		}
	}
	// Augment none: the training view is the same centre crop.
	o.Augment = "none"
	fs2, err := NewFileSet(&data.Files{Name: "grad", Paths: []string{p1, p2}, Labels: []int32{0, 1}}, nil, o, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst2 := make([]float32, len(dst))
	if err := fs2.FillEpoch(3, []int{0, 1}, nil, dst2); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dst, dst2) {
		t.Error("augment none: the training view differs from the centre crop")
	}
}

// crop is one recovered random crop: its top-left corner and whether it is mirrored.
type crop struct {
	x0, y0 int
	flip   bool
}

// recoverCrop reads (x0, y0, flip) off a random_crop view of the 40×32 gradient (no resampling)
// and checks that every pixel is that crop: R = 2x identifies the source column (mirrored
// columns run backwards), G = 2y + 10 the row, B = x + y both.
func recoverCrop(t *testing.T, out []float32, n int, mean, std []float64) crop {
	t.Helper()
	byteAt := func(u, v, c int) float64 {
		return math.Round((float64(out[(v*n+u)*3+c])*std[c] + mean[c]) * 255)
	}
	r0, r1 := byteAt(0, 0, 0), byteAt(1, 0, 0)
	cr := crop{flip: r1 < r0, y0: int(byteAt(0, 0, 1)-10) / 2}
	cr.x0 = int(r0) / 2
	if cr.flip {
		cr.x0 -= n - 1
	}
	for v := 0; v < n; v++ {
		for u := 0; u < n; u++ {
			x := cr.x0 + u
			if cr.flip {
				x = cr.x0 + n - 1 - u
			}
			y := cr.y0 + v
			if byteAt(u, v, 0) != float64(2*x) || byteAt(u, v, 1) != float64(2*y+10) || byteAt(u, v, 2) != float64(x+y) {
				t.Fatalf("pixel (%d, %d) is not source (%d, %d) of crop %+v", u, v, x, y, cr)
			}
		}
	}
	if cr.x0 < 0 || cr.y0 < 0 || cr.x0+n > 40 || cr.y0+n > 32 {
		t.Fatalf("crop %+v outside the 40×32 image", cr)
	}
	return cr
}

// TestFileSetTrainCrops: training crops are real crops (checked pixel by pixel), identical for
// the same seed and epoch whatever the worker count and cache state, different across epochs
// and seeds, and both flips occur.
func TestFileSetTrainCrops(t *testing.T) {
	dir := t.TempDir()
	const imgs, n = 6, 16
	var paths []string
	for i := 0; i < imgs; i++ {
		p := filepath.Join(dir, fmt.Sprintf("g%d.png", i))
		gradientPNG(t, p, 40, 32)
		paths = append(paths, p)
	}
	files := &data.Files{Name: "grad", Paths: paths, Labels: make([]int32, imgs)}
	mean, std := []float64{0.485, 0.456, 0.406}, []float64{0.229, 0.224, 0.225}
	view := func(seed int64, epoch, workers int) ([]crop, []float32) {
		fs, err := NewFileSet(files, nil, ImageOptions{Size: n, Resize: 32, Augment: "random_crop", Workers: workers}, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		idx := []int{0, 1, 2, 3, 4, 5, 2} // image 2 twice: its two copies are drawn independently
		dst := make([]float32, len(idx)*n*n*3)
		if err := fs.FillEpoch(epoch, idx, [][]int{{5, 4}}, dst); err != nil {
			t.Fatal(err)
		}
		var cs []crop
		for k := range idx {
			cs = append(cs, recoverCrop(t, dst[k*n*n*3:(k+1)*n*n*3], n, mean, std))
		}
		return cs, dst
	}
	a, da := view(7, 0, 1)
	_, db := view(7, 0, 4)
	if !slices.Equal(da, db) {
		t.Error("seed 7 epoch 0: 1 and 4 workers give different inputs")
	}
	flips, corners := map[bool]int{}, map[crop]bool{}
	for e := 1; e < 4; e++ {
		c, _ := view(7, e, 2)
		if slices.Equal(c, a) {
			t.Errorf("epoch %d repeats epoch 0's crops %v", e, a)
		}
		for _, x := range c {
			flips[x.flip]++
			corners[crop{x.x0, x.y0, false}] = true
		}
	}
	if c, _ := view(8, 0, 2); slices.Equal(c, a) {
		t.Errorf("seeds 7 and 8 give the same crops %v", a)
	}
	if a[2] == a[6] {
		t.Errorf("the two copies of image 2 got the same crop %v", a[2])
	}
	if flips[true] == 0 || flips[false] == 0 || len(corners) < 5 {
		t.Errorf("over 3 epochs × 7 crops: flips %v, %d distinct corners", flips, len(corners))
	}
}

// TestFileSetRandomResizedCrop: with scale [1, 1] and ratio [1, 1] on a square image the box is
// the whole image, so the view is the 2× reduction of the 48×48 gradient to 24×24: interior
// values R = 4X + 1, G = 4Y + 11, B = 2X + 2Y + 1 (see TestFileSetCentreCrop), mirrored when
// flipped. The border rows and columns (0 and 23) are clipped by the filter and skipped.
func TestFileSetRandomResizedCrop(t *testing.T) {
	p := filepath.Join(t.TempDir(), "sq.png")
	gradientPNG(t, p, 48, 48)
	const n = 24
	mean, std := []float64{0, 0, 0}, []float64{1, 1, 1}
	fs, err := NewFileSet(&data.Files{Name: "sq", Paths: []string{p, p, p, p}, Labels: make([]int32, 4)}, nil,
		ImageOptions{Size: n, Resize: 48, Mean: mean, Std: std, Scale: []float64{1, 1}, Ratio: []float64{1, 1}}, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	flips := map[bool]int{}
	for e := 0; e < 4; e++ {
		dst := make([]float32, 4*n*n*3)
		if err := fs.FillEpoch(e, []int{0, 1, 2, 3}, nil, dst); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 4; k++ {
			out := dst[k*n*n*3:]
			flip := out[(1*n+1)*3] > out[(1*n+2)*3] // R decreases along a row when mirrored
			flips[flip]++
			for Y := 1; Y < n-1; Y++ {
				for u := 1; u < n-1; u++ {
					X := u
					if flip {
						X = n - 1 - u
					}
					want := [3]float64{float64(4*X + 1), float64(4*Y + 11), float64(2*X + 2*Y + 1)}
					for c := 0; c < 3; c++ {
						if got := float64(out[(Y*n+u)*3+c]) * 255; math.Abs(got-want[c]) > 1e-3 {
							t.Fatalf("epoch %d image %d (%d, %d) channel %d: %v, want %v", e, k, u, Y, c, got, want[c])
						}
					}
				}
			}
		}
	}
	if flips[true] == 0 || flips[false] == 0 {
		t.Errorf("flips %v over 16 views", flips)
	}
}

// TestRRCBox checks the RandomResizedCrop box: inside the image, area fraction and aspect ratio
// within the ranges up to the rounding of the sides (±½ pixel each), and the fallback when no
// box fits: a 100×10 image with scale [0.9, 1] and ratio [1, 1] needs a ~30-pixel square, so the
// fallback takes the largest centred square, 10×10 at (45, 0).
func TestRRCBox(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const W, H = 341, 256
	for i := 0; i < 2000; i++ {
		x0, y0, w, h := rrcBox(r, W, H, [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3})
		if x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0+w > W || y0+h > H {
			t.Fatalf("box (%d, %d, %d, %d) outside %d×%d", x0, y0, w, h, W, H)
		}
		if w == W && h == H {
			continue // may be the fallback (in-range ratio: the whole image)
		}
		fw, fh := float64(w), float64(h)
		lo := (fw - 0.5) * (fh - 0.5) / (W * H)
		hi := (fw + 0.5) * (fh + 0.5) / (W * H)
		if hi < 0.08 || lo > 1 || (fw+0.5)/(fh-0.5) < 0.75 || (fw-0.5)/(fh+0.5) > 4.0/3 {
			t.Fatalf("box %d×%d: area fraction in [%v, %v], aspect %v", w, h, lo, hi, fw/fh)
		}
	}
	if x0, y0, w, h := rrcBox(r, 100, 10, [2]float64{0.9, 1}, [2]float64{1, 1}); x0 != 45 || y0 != 0 || w != 10 || h != 10 {
		t.Errorf("fallback box (%d, %d, %d, %d), want (45, 0, 10, 10)", x0, y0, w, h)
	}
}

// TestDecodeCache: one decode per file however many concurrent requests; eviction keeps the
// pixel bytes within the budget (least recently used first); prefetched files are not decoded
// again; a damaged file is an error naming it, from FillEpoch, and a panic from Fill.
func TestDecodeCache(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 4; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		gradientPNG(t, p, 40, 32) // at short side 16: 20×16×3 = 960 bytes
		paths = append(paths, p)
	}
	c := NewDecodeCache(16, 2*960, 4)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() { defer wg.Done(); c.Get(paths[0]) }()
	}
	wg.Wait()
	if c.Decodes() != 1 {
		t.Errorf("8 concurrent Gets of one file: %d decodes", c.Decodes())
	}
	c.Get(paths[1])
	c.Get(paths[0]) // paths[1] is now the least recently used
	c.Get(paths[2]) // evicts paths[1]
	if c.Bytes() != 2*960 || c.Decodes() != 3 {
		t.Errorf("after 3 files: %d bytes, %d decodes; want 1920, 3", c.Bytes(), c.Decodes())
	}
	c.Get(paths[0])
	c.Get(paths[1])
	if c.Decodes() != 4 {
		t.Errorf("paths[0] should have stayed and paths[1] been evicted: %d decodes, want 4", c.Decodes())
	}
	c2 := NewDecodeCache(16, 1<<20, 2)
	c2.Prefetch(paths)
	deadline := time.Now().Add(20 * time.Second)
	for c2.Decodes() < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range paths {
		c2.Get(p)
	}
	if c2.Decodes() != 4 {
		t.Errorf("prefetch then Get of 4 files: %d decodes", c2.Decodes())
	}

	bad := filepath.Join(dir, "bad.jpg") // JPEG start and end markers around garbage
	writeFixture(t, bad, append(append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, bytes.Repeat([]byte{7}, 40)...), 0xFF, 0xD9))
	fs, err := NewFileSet(&data.Files{Name: "bad", Paths: []string{paths[0], bad}, Labels: []int32{0, 1}}, nil, ImageOptions{Size: 8, Resize: 16}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 2*8*8*3)
	if err := fs.FillEpoch(0, []int{0, 1}, nil, dst); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("FillEpoch of a damaged file: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), bad) {
				t.Errorf("Fill of a damaged file: recovered %v", r)
			}
		}()
		fs.Fill([]int{1}, dst)
	}()
}
