package datasets

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/matv5"
)

// jpegBytes encodes a small valid JPEG whose pixels depend on v.
func jpegBytes(v int) []byte {
	im := image.NewRGBA(image.Rect(0, 0, 8, 6))
	for i := range im.Pix {
		im.Pix[i] = uint8(v*37 + i)
	}
	var b bytes.Buffer
	jpeg.Encode(&b, im, nil)
	return b.Bytes()
}

func pngBytes() []byte {
	im := image.NewGray(image.Rect(0, 0, 3, 3))
	im.Set(1, 1, color.Gray{200})
	var b bytes.Buffer
	png.Encode(&b, im)
	return b.Bytes()
}

func put(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func putText(t *testing.T, path string, lines ...string) {
	put(t, path, []byte(strings.Join(lines, "\n")+"\n"))
}

// truncate cuts a file to half its size (a broken download).
func truncate(t *testing.T, path string) {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()/2); err != nil {
		t.Fatal(err)
	}
}

// wantErr checks that err wraps kind and is a *FileError whose file ends with file and whose
// line is line (−1: any).
func wantErr(t *testing.T, what string, err error, kind error, file string, line int) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	t.Logf("%s: %v", what, err)
	var fe *data.FileError
	if !errors.Is(err, kind) || !errors.As(err, &fe) {
		t.Errorf("%s: got %v, want a FileError wrapping %v", what, err, kind)
		return
	}
	if !strings.HasSuffix(fe.File, file) || line >= 0 && fe.Line != line {
		t.Errorf("%s: error names %s:%d, want …%s:%d (%v)", what, fe.File, fe.Line, file, line, err)
	}
}

func TestImageMarkers(t *testing.T) {
	dir := t.TempDir()
	good, gp := filepath.Join(dir, "a.jpg"), filepath.Join(dir, "a.png")
	put(t, good, jpegBytes(1))
	put(t, gp, pngBytes())
	o := LoadOptions{}
	if err := o.check("x", "l", 1, good); err != nil {
		t.Fatal(err)
	}
	if err := (LoadOptions{Check: CheckDecode}).check("x", "l", 1, gp); err != nil {
		t.Fatal(err)
	}
	// A JPEG with trailing zero padding after EOI is fine.
	padded := filepath.Join(dir, "p.jpg")
	put(t, padded, append(jpegBytes(2), make([]byte, 20)...))
	if err := o.check("x", "l", 1, padded); err != nil {
		t.Errorf("padded JPEG: %v", err)
	}
	truncate(t, good)
	truncate(t, gp)
	wantErr(t, "truncated jpeg", o.check("x", "l", 3, good), data.ErrTruncated, "l", 3)
	wantErr(t, "truncated png", o.check("x", "l", 4, gp), data.ErrTruncated, "l", 4)
	txt := filepath.Join(dir, "t.jpg")
	put(t, txt, []byte("hello, this is not an image"))
	wantErr(t, "text", o.check("x", "l", 5, txt), data.ErrFormat, "l", 5)
	if err := (LoadOptions{Check: CheckExists}).check("x", "l", 5, txt); err != nil {
		t.Errorf("CheckExists looked at the contents: %v", err)
	}
}

// cubFixture writes a 4-class CUB-200-2011 tree: classes 1, 2 (train side) and 101, 102 (test
// side), 2 images each; train_test_split.txt marks the first image of each class as train.
func cubFixture(t *testing.T) string {
	root := t.TempDir()
	classes := []int{1, 2, 101, 102}
	var cl, im, lab, sp []string
	id := 0
	for _, c := range classes {
		name := fmt.Sprintf("%03d.Bird_%d", c, c)
		cl = append(cl, fmt.Sprintf("%d %s", c, name))
		for k := 0; k < 2; k++ {
			id++
			rel := fmt.Sprintf("%s/img_%d.jpg", name, id)
			put(t, filepath.Join(root, "images", rel), jpegBytes(id))
			im = append(im, fmt.Sprintf("%d %s", id, rel))
			lab = append(lab, fmt.Sprintf("%d %d", id, c))
			sp = append(sp, fmt.Sprintf("%d %d", id, 1-k))
		}
	}
	putText(t, filepath.Join(root, "classes.txt"), cl...)
	putText(t, filepath.Join(root, "images.txt"), im...)
	putText(t, filepath.Join(root, "image_class_labels.txt"), lab...)
	putText(t, filepath.Join(root, "train_test_split.txt"), sp...)
	return root
}

func TestCUB(t *testing.T) {
	root := cubFixture(t)
	s, err := CUB(root, CUBOpenSet, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 4 || s.Test.Len() != 4 || s.Train.Labels[2] != 1 || s.Test.Labels[0] != 100 || s.Test.ClassNames[101] != "102.Bird_102" {
		t.Errorf("open set: %v labels %v / %v", s, s.Train.Labels, s.Test.Labels)
	}
	o, err := CUB(root, CUBOfficial, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Official split: image 1 of each class is train → train labels 0, 1, 100, 101 (shared classes).
	if o.Train.Len() != 4 || o.Train.NumClasses() != 4 || o.Test.NumClasses() != 4 || o.Train.Labels[3] != 101 {
		t.Errorf("official: %v, train labels %v", o, o.Train.Labels)
	}

	// Damaged copies.
	r := cubFixture(t)
	os.Remove(filepath.Join(r, "images", "002.Bird_2", "img_4.jpg"))
	_, err = CUB(r, CUBOpenSet, LoadOptions{})
	wantErr(t, "missing image", err, data.ErrMissing, "images.txt", 4)

	r = cubFixture(t)
	truncate(t, filepath.Join(r, "images", "101.Bird_101", "img_5.jpg"))
	_, err = CUB(r, CUBOpenSet, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "images.txt", 5)

	r = cubFixture(t)
	putText(t, filepath.Join(r, "image_class_labels.txt"), "1 1", "2 1", "3 2", "4 2", "5 101", "6 150", "7 102", "8 102")
	_, err = CUB(r, CUBOpenSet, LoadOptions{})
	wantErr(t, "unknown class", err, data.ErrUnknownClass, "image_class_labels.txt", 6)

	r = cubFixture(t)
	putText(t, filepath.Join(r, "train_test_split.txt"), "1 1", "2 0", "3 1", "99 0")
	_, err = CUB(r, CUBOfficial, LoadOptions{})
	wantErr(t, "split names absent image", err, data.ErrMissing, "train_test_split.txt", 4)

	r = cubFixture(t)
	os.Remove(filepath.Join(r, "images.txt"))
	_, err = CUB(r, CUBOpenSet, LoadOptions{})
	wantErr(t, "missing list", err, data.ErrMissing, "images.txt", 0)

	_, err = CUB(filepath.Join(r, "nope"), CUBOpenSet, LoadOptions{})
	wantErr(t, "missing root", err, data.ErrMissing, "nope", 0)
}

// carsFixture writes 4 car images (classes 1, 98, 99, 196) with a compressed cars_annos.mat.
func carsFixture(t *testing.T) string {
	root := t.TempDir()
	fields := []string{"relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"}
	var elems [][]*matv5.Array
	for i, c := range []int{1, 98, 99, 196} {
		rel := fmt.Sprintf("car_ims/%06d.jpg", i+1)
		put(t, filepath.Join(root, rel), jpegBytes(i))
		elems = append(elems, []*matv5.Array{matv5.NewString(rel), matv5.NewScalar(float64(10 + i)), matv5.NewScalar(5),
			matv5.NewScalar(300), matv5.NewScalar(200), matv5.NewScalar(float64(c)), matv5.NewScalar(float64(i % 2))})
	}
	var names []*matv5.Array
	for c := 1; c <= 196; c++ {
		names = append(names, matv5.NewString(fmt.Sprintf("Make Model %d", c)))
	}
	writeMat(t, filepath.Join(root, "cars_annos.mat"), matv5.NewStructArray("annotations", fields, elems), matv5.NewCell("class_names", names...))
	return root
}

func writeMat(t *testing.T, path string, vars ...*matv5.Array) {
	var b bytes.Buffer
	if err := matv5.Encode(&b, vars, true); err != nil {
		t.Fatal(err)
	}
	put(t, path, b.Bytes())
}

func TestCars196Mat(t *testing.T) {
	root := carsFixture(t)
	s, err := Cars196(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Classes 1, 98 → train labels 0, 97; 99, 196 → test labels 98, 195 (the mat's test flag is ignored).
	if s.Train.Len() != 2 || s.Test.Len() != 2 || s.Train.Labels[1] != 97 || s.Test.Labels[1] != 195 ||
		s.Train.BBoxes[1] != [4]int32{11, 5, 300, 200} || s.Test.ClassNames[195] != "Make Model 196" {
		t.Errorf("split %v labels %v %v boxes %v", s, s.Train.Labels, s.Test.Labels, s.Train.BBoxes)
	}
	r := carsFixture(t)
	truncate(t, filepath.Join(r, "cars_annos.mat"))
	_, err = Cars196(r, LoadOptions{})
	wantErr(t, "truncated mat", err, data.ErrTruncated, "cars_annos.mat", 0)

	r = carsFixture(t)
	os.Remove(filepath.Join(r, "car_ims", "000003.jpg"))
	_, err = Cars196(r, LoadOptions{})
	wantErr(t, "missing image", err, data.ErrMissing, "cars_annos.mat", 3) // line = annotation number

	r = carsFixture(t)
	truncate(t, filepath.Join(r, "car_ims", "000004.jpg"))
	_, err = Cars196(r, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "cars_annos.mat", 4)

	r = t.TempDir()
	put(t, filepath.Join(r, "car_ims/000001.jpg"), jpegBytes(1))
	writeMat(t, filepath.Join(r, "cars_annos.mat"), matv5.NewStructArray("annotations", []string{"relative_im_path", "bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "test"},
		[][]*matv5.Array{{matv5.NewString("car_ims/000001.jpg"), matv5.NewScalar(1), matv5.NewScalar(1), matv5.NewScalar(2), matv5.NewScalar(2), matv5.NewScalar(197), matv5.NewScalar(0)}}))
	_, err = Cars196(r, LoadOptions{})
	wantErr(t, "unknown class", err, data.ErrUnknownClass, "cars_annos.mat", 1)
}

func TestCars196CSV(t *testing.T) {
	root := t.TempDir()
	put(t, filepath.Join(root, "cars_train", "00001.jpg"), jpegBytes(1))
	put(t, filepath.Join(root, "cars_train", "00002.jpg"), jpegBytes(2))
	put(t, filepath.Join(root, "cars_test", "00001.jpg"), jpegBytes(3))
	putText(t, filepath.Join(root, "anno_train.csv"), "file,x1,y1,x2,y2,class", "00001.jpg,39,116,569,375,14", "00002.jpg,36,116,868,587,120")
	putText(t, filepath.Join(root, "anno_test.csv"), "00001.jpg,30,52,246,147,181")
	s, err := Cars196(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 1 || s.Test.Len() != 2 || s.Train.Labels[0] != 13 || !strings.HasSuffix(s.Test.Paths[1], filepath.Join("cars_test", "00001.jpg")) {
		t.Errorf("%v %v %v", s, s.Train.Labels, s.Test.Paths)
	}
	putText(t, filepath.Join(root, "anno_test.csv"), "00001.jpg,30,52,246,147,181", "00001.jpg,30,52,246,147,0")
	_, err = Cars196(root, LoadOptions{})
	wantErr(t, "class 0", err, data.ErrUnknownClass, "anno_test.csv", 2)
	putText(t, filepath.Join(root, "anno_test.csv"), "00009.jpg,30,52,246,147,181")
	_, err = Cars196(root, LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "anno_test.csv", 1)
}

func sopFixture(t *testing.T) string {
	root := t.TempDir()
	for i, p := range []string{"bicycle_final/1_0.JPG", "bicycle_final/1_1.JPG", "chair_final/2_0.JPG", "chair_final/3_0.JPG"} {
		put(t, filepath.Join(root, p), jpegBytes(i))
	}
	putText(t, filepath.Join(root, "Ebay_train.txt"), "image_id class_id super_class_id path",
		"1 1 1 bicycle_final/1_0.JPG", "2 1 1 bicycle_final/1_1.JPG", "3 2 5 chair_final/2_0.JPG")
	putText(t, filepath.Join(root, "Ebay_test.txt"), "image_id class_id super_class_id path", "1 3 5 chair_final/3_0.JPG")
	return root
}

func TestSOP(t *testing.T) {
	root := sopFixture(t)
	s, err := SOP(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 3 || s.Train.NumClasses() != 2 || s.Test.Labels[0] != 2 || s.Train.Coarse[2] != 4 {
		t.Errorf("%v labels %v coarse %v", s, s.Train.Labels, s.Train.Coarse)
	}
	putText(t, filepath.Join(root, "Ebay_test.txt"), "image_id class_id super_class_id path", "1 3 13 chair_final/3_0.JPG")
	_, err = SOP(root, LoadOptions{})
	wantErr(t, "super-class 13", err, data.ErrUnknownClass, "Ebay_test.txt", 2)
	put(t, filepath.Join(root, "chair_final/4_0.JPG"), jpegBytes(9)[:100])
	putText(t, filepath.Join(root, "Ebay_test.txt"), "image_id class_id super_class_id path", "1 3 5 chair_final/3_0.JPG", "2 4 5 chair_final/4_0.JPG")
	_, err = SOP(root, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "Ebay_test.txt", 3)
	putText(t, filepath.Join(root, "Ebay_test.txt"), "image_id class_id super_class_id path", "1 3 5 chair_final/3_0.JPG", "2 1 1 bicycle_final/1_0.JPG")
	_, err = SOP(root, LoadOptions{})
	wantErr(t, "class in both", err, data.ErrFormat, "Ebay_test.txt", 3)
	putText(t, filepath.Join(root, "Ebay_test.txt"), "image_id class_id super_class_id path", "1 3 5 chair_final/9_0.JPG")
	_, err = SOP(root, LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "Ebay_test.txt", 2)
}

func TestInShop(t *testing.T) {
	root := t.TempDir()
	rows := []string{"img/WOMEN/Dresses/id_00000001/02_1_front.jpg id_00000001 train",
		"img/WOMEN/Dresses/id_00000002/02_1_front.jpg id_00000002 query",
		"img/WOMEN/Dresses/id_00000002/02_2_side.jpg id_00000002 gallery",
		"img/MEN/Denim/id_00000007/01_1_front.jpg id_00000007 gallery"}
	for i, r := range rows {
		put(t, filepath.Join(root, strings.Fields(r)[0]), jpegBytes(i))
	}
	list := filepath.Join(root, "Eval", "list_eval_partition.txt")
	putText(t, list, append([]string{"4", "image_name item_id evaluation_status"}, rows...)...)
	s, err := InShop(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 1 || s.Query.Len() != 1 || s.Gallery.Len() != 2 || s.Gallery.Labels[1] != 7 || s.Query.Labels[0] != 2 {
		t.Errorf("%v", s)
	}
	putText(t, list, append([]string{"5", "image_name item_id evaluation_status"}, rows...)...)
	_, err = InShop(root, LoadOptions{})
	wantErr(t, "count mismatch", err, data.ErrTruncated, "list_eval_partition.txt", 0)
	putText(t, list, "2", "image_name item_id evaluation_status", rows[0], "img/x.jpg id_00000003 validation")
	_, err = InShop(root, LoadOptions{})
	wantErr(t, "bad status", err, data.ErrFormat, "list_eval_partition.txt", 4)
	putText(t, list, "1", "image_name item_id evaluation_status", "img/x.jpg item3 train")
	_, err = InShop(root, LoadOptions{})
	wantErr(t, "bad item id", err, data.ErrUnknownClass, "list_eval_partition.txt", 3)
	put(t, filepath.Join(root, "img/y.jpg"), jpegBytes(3)[:90])
	putText(t, list, "2", "image_name item_id evaluation_status", rows[0], "img/y.jpg id_00000003 gallery")
	_, err = InShop(root, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "list_eval_partition.txt", 4)
	putText(t, list, "1", "image_name item_id evaluation_status", "img/x.jpg id_00000003 train")
	_, err = InShop(root, LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "list_eval_partition.txt", 3)
}

func TestINaturalist(t *testing.T) {
	root := t.TempDir()
	tr := []string{"train_val2018/Plantae/7477/a.jpg", "train_val2018/Plantae/7477/b.jpg", "train_val2018/Aves/3001/c.jpg"}
	te := []string{"train_val2018/Insecta/555/d.jpg"}
	for i, p := range append(append([]string{}, tr...), te...) {
		put(t, filepath.Join(root, p), jpegBytes(i))
	}
	dir := filepath.Join(root, "Inat_dataset_splits")
	putText(t, filepath.Join(dir, "Inaturalist_train_set1.txt"), tr...)
	putText(t, filepath.Join(dir, "Inaturalist_test_set1.txt"), te...)
	s, err := INaturalist2018(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Super-categories sorted: Aves 0, Insecta 1, Plantae 2.
	if s.Train.Len() != 3 || s.Train.Labels[0] != 7477 || s.Train.Coarse[2] != 0 || s.Test.Coarse[0] != 1 || s.Test.Labels[0] != 555 {
		t.Errorf("%v labels %v coarse %v", s, s.Train.Labels, s.Train.Coarse)
	}
	putText(t, filepath.Join(dir, "Inaturalist_test_set1.txt"), te[0], "train_val2018/Aves/3001/c.jpg")
	_, err = INaturalist2018(root, LoadOptions{})
	wantErr(t, "class in both", err, data.ErrFormat, "Inaturalist_test_set1.txt", 2)
	putText(t, filepath.Join(dir, "Inaturalist_test_set1.txt"), "train_val2018/Aves/x12/c.jpg")
	_, err = INaturalist2018(root, LoadOptions{})
	wantErr(t, "bad category", err, data.ErrUnknownClass, "Inaturalist_test_set1.txt", 1)
	put(t, filepath.Join(root, "train_val2018/Aves/12/t.jpg"), jpegBytes(3)[:90])
	putText(t, filepath.Join(dir, "Inaturalist_test_set1.txt"), te[0], "train_val2018/Aves/12/t.jpg")
	_, err = INaturalist2018(root, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "Inaturalist_test_set1.txt", 2)
	putText(t, filepath.Join(dir, "Inaturalist_test_set1.txt"), "train_val2018/Aves/12/zz.jpg")
	_, err = INaturalist2018(root, LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "Inaturalist_test_set1.txt", 1)
}

func TestVehicleID(t *testing.T) {
	root := t.TempDir()
	for i, n := range []string{"0000001", "0000002", "0000003", "0000004"} {
		put(t, filepath.Join(root, "image", n+".jpg"), jpegBytes(i))
	}
	sp := filepath.Join(root, "train_test_split")
	putText(t, filepath.Join(sp, "train_list.txt"), "0000001 5", "0000002 5", "0000003 9")
	putText(t, filepath.Join(sp, "test_list_800.txt"), "0000004 11")
	s, err := VehicleID(root, 800, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 3 || s.Train.NumClasses() != 2 || s.Test.Labels[0] != 11 {
		t.Errorf("%v", s)
	}
	if _, err := VehicleID(root, 1600, LoadOptions{}); !errors.Is(err, data.ErrMissing) {
		t.Errorf("missing test_list_1600: %v", err)
	}
	if _, err := VehicleID(root, 999, LoadOptions{}); err == nil {
		t.Error("test size 999 accepted")
	}
	putText(t, filepath.Join(sp, "test_list_800.txt"), "0000004 11", "0000003 9")
	_, err = VehicleID(root, 800, LoadOptions{})
	wantErr(t, "vehicle in both", err, data.ErrFormat, "test_list_800.txt", 2)
	put(t, filepath.Join(root, "image", "0000009.jpg"), pngBytes()[:20])
	putText(t, filepath.Join(sp, "test_list_800.txt"), "0000004 11", "0000009 12")
	_, err = VehicleID(root, 800, LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "test_list_800.txt", 2)
	putText(t, filepath.Join(sp, "test_list_800.txt"), "0000005 11")
	_, err = VehicleID(root, 800, LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "test_list_800.txt", 1)
}

func TestMarket1501(t *testing.T) {
	root := t.TempDir()
	files := map[string][]string{
		"bounding_box_train": {"0002_c1s1_000451_03.jpg", "0002_c2s1_000301_01.jpg", "0007_c3s3_077419_03.jpg", "-1_c1s1_000401_03.jpg"},
		"query":              {"0002_c6s1_001001_00.jpg"},
		"bounding_box_test":  {"0002_c1s1_000551_01.jpg", "-1_c1s1_000001_01.jpg", "0000_c6s1_002451_05.jpg", "0009_c5s2_123456_02.jpg"},
	}
	for d, fs := range files {
		for i, f := range fs {
			put(t, filepath.Join(root, d, f), jpegBytes(i))
		}
	}
	put(t, filepath.Join(root, "query", "Thumbs.db"), []byte("ignored"))
	s, err := Market1501(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Sorted names: train "-1_…" dropped → 0002 c1, 0002 c2, 0007 c3.
	if s.Train.Len() != 3 || s.Train.NumClasses() != 2 || s.Train.Cams[1] != 2 || s.Query.Cams[0] != 6 {
		t.Errorf("train %v cams %v", s.Train.Labels, s.Train.Cams)
	}
	// Gallery sorted: "-1_c1…", "0000_c6…", "0002_c1…", "0009_c5…".
	if g := s.Gallery.Labels; len(g) != 4 || g[0] != MarketJunk || g[1] != MarketDistractor || g[3] != 9 {
		t.Errorf("gallery labels %v", g)
	}
	put(t, filepath.Join(root, "query", "0003_x1_000.jpg"), jpegBytes(1))
	_, err = Market1501(root, LoadOptions{})
	wantErr(t, "bad name", err, data.ErrFormat, "0003_x1_000.jpg", 0)
	os.Remove(filepath.Join(root, "query", "0003_x1_000.jpg"))
	put(t, filepath.Join(root, "query", "-1_c1s1_000001_01.jpg"), jpegBytes(1))
	_, err = Market1501(root, LoadOptions{})
	wantErr(t, "junk query", err, data.ErrUnknownClass, "-1_c1s1_000001_01.jpg", 0)
	os.Remove(filepath.Join(root, "query", "-1_c1s1_000001_01.jpg"))
	truncate(t, filepath.Join(root, "bounding_box_test", "0009_c5s2_123456_02.jpg"))
	_, err = Market1501(root, LoadOptions{})
	wantErr(t, "truncated", err, data.ErrTruncated, "bounding_box_test", 0)
	os.RemoveAll(filepath.Join(root, "query"))
	_, err = Market1501(root, LoadOptions{})
	wantErr(t, "missing folder", err, data.ErrMissing, "query", 0)
}

func TestLFWPairs(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"Abel_Pacheco/Abel_Pacheco_0001.jpg", "Abel_Pacheco/Abel_Pacheco_0004.jpg", "Ann_V/Ann_V_0002.jpg", "Bo_X/Bo_X_0001.jpg"} {
		put(t, filepath.Join(root, "lfw", f), jpegBytes(1))
	}
	pairs := filepath.Join(root, "pairs.txt")
	putText(t, pairs, "2\t1", "Abel_Pacheco\t1\t4", "Abel_Pacheco\t1\tAnn_V\t2", "Bo_X 1 1", "Ann_V 2 Bo_X 1")
	p, err := LFWPairs(pairs, filepath.Join(root, "lfw"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 4 || p.Folds != 2 || !p.Same[0] || p.Same[1] || p.Fold[2] != 1 || !strings.HasSuffix(p.B[1], "Ann_V_0002.jpg") {
		t.Errorf("%+v", p)
	}
	putText(t, pairs, "2\t1", "Abel_Pacheco\t1\t4", "Abel_Pacheco\t1\t4", "Bo_X 1 1", "Ann_V 2 Bo_X 1")
	_, err = LFWPairs(pairs, filepath.Join(root, "lfw"), LoadOptions{})
	wantErr(t, "same row where different expected", err, data.ErrFormat, "pairs.txt", 3)
	putText(t, pairs, "2\t1", "Abel_Pacheco\t1\t4", "Abel_Pacheco\t1\tAnn_V\t3", "Bo_X 1 1", "Ann_V 2 Bo_X 1")
	_, err = LFWPairs(pairs, filepath.Join(root, "lfw"), LoadOptions{})
	wantErr(t, "absent image", err, data.ErrMissing, "pairs.txt", 3)
	put(t, filepath.Join(root, "lfw", "Ann_V", "Ann_V_0003.jpg"), jpegBytes(1)[:50])
	putText(t, pairs, "2\t1", "Abel_Pacheco\t1\t4", "Abel_Pacheco\t1\tAnn_V\t2", "Ann_V 2 3", "Ann_V 2 Bo_X 1")
	_, err = LFWPairs(pairs, filepath.Join(root, "lfw"), LoadOptions{})
	wantErr(t, "truncated image", err, data.ErrTruncated, "pairs.txt", 4)
	putText(t, pairs, "2\t1", "Abel_Pacheco\t1\t4")
	_, err = LFWPairs(pairs, filepath.Join(root, "lfw"), LoadOptions{})
	wantErr(t, "short file", err, data.ErrTruncated, "pairs.txt", 0)
}

// pickleBin builds an insightface .bin pickle by hand. py3 uses protocol 4 (FRAME, MEMOIZE,
// SHORT_BINBYTES/BINBYTES); otherwise protocol 2 as Python 2 wrote it (BINPUT, SHORT_BINSTRING/
// BINSTRING for str).
func pickleBin(bins [][]byte, same []bool, py3 bool) []byte {
	var b []byte
	memo := 0
	put := func() {
		if py3 {
			b = append(b, 0x94)
		} else {
			b = append(b, 'q', byte(memo))
		}
		memo++
	}
	if py3 {
		b = append(b, 0x80, 4, 0x95)
		b = binary.LittleEndian.AppendUint64(b, 0) // frame length (not checked)
	} else {
		b = append(b, 0x80, 2)
	}
	b = append(b, ']')
	put()
	b = append(b, '(')
	for _, x := range bins {
		short, long := byte('U'), byte('T')
		if py3 {
			short, long = 'C', 'B'
		}
		if len(x) < 256 {
			b = append(b, short, byte(len(x)))
		} else {
			b = append(b, long)
			b = binary.LittleEndian.AppendUint32(b, uint32(len(x)))
		}
		b = append(b, x...)
		put()
	}
	b = append(b, 'e', ']')
	put()
	b = append(b, '(')
	for _, s := range same {
		if s {
			b = append(b, 0x88)
		} else {
			b = append(b, 0x89)
		}
	}
	b = append(b, 'e', 0x86)
	put()
	return append(b, '.')
}

func TestInsightfaceBin(t *testing.T) {
	dir := t.TempDir()
	imgs := [][]byte{jpegBytes(1), jpegBytes(2), pngBytes(), jpegBytes(3)}
	for _, py3 := range []bool{true, false} {
		p := filepath.Join(dir, fmt.Sprintf("lfw%v.bin", py3))
		put(t, p, pickleBin(imgs, []bool{true, false}, py3))
		bp, err := LoadInsightfaceBin(p, LoadOptions{Check: CheckDecode})
		if err != nil {
			t.Fatalf("py3=%v: %v", py3, err)
		}
		if len(bp.Images) != 4 || !bp.Same[0] || bp.Same[1] || !bytes.Equal(bp.Images[2], imgs[2]) {
			t.Errorf("py3=%v: %d images, same %v", py3, len(bp.Images), bp.Same)
		}
	}
	bad := filepath.Join(dir, "bad.bin")
	put(t, bad, pickleBin(imgs[:3], []bool{true, false}, true))
	_, err := LoadInsightfaceBin(bad, LoadOptions{})
	wantErr(t, "3 images for 2 pairs", err, data.ErrFormat, "bad.bin", 0)
	full := pickleBin(imgs, []bool{true, false}, true)
	put(t, bad, full[:len(full)/2])
	_, err = LoadInsightfaceBin(bad, LoadOptions{})
	wantErr(t, "truncated pickle", err, data.ErrTruncated, "bad.bin", 0)
	cut := [][]byte{imgs[0], imgs[1][:len(imgs[1])/2]}
	put(t, bad, pickleBin(cut, []bool{true}, true))
	_, err = LoadInsightfaceBin(bad, LoadOptions{})
	wantErr(t, "truncated JPEG inside", err, data.ErrTruncated, "bad.bin", 0)
	// Any global other than the NumPy array machinery is refused, not executed.
	put(t, bad, []byte("\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00ls\x85R."))
	_, err = LoadInsightfaceBin(bad, LoadOptions{})
	if !errors.Is(err, errPickleObject) {
		t.Errorf("os.system pickle: %v", err)
	}
	_, err = LoadInsightfaceBin(filepath.Join(dir, "none.bin"), LoadOptions{})
	wantErr(t, "missing", err, data.ErrMissing, "none.bin", 0)
}

// writeRec writes an indexed RecordIO pair. Payloads are split at 4-byte-aligned occurrences of
// the magic, as dmlc's writer does.
func writeRec(t *testing.T, dir string, payloads map[int][]byte, keys []int) {
	var rec bytes.Buffer
	var idx []string
	for _, k := range keys {
		idx = append(idx, fmt.Sprintf("%d\t%d", k, rec.Len()))
		p := payloads[k]
		var parts [][]byte
		start := 0
		for i := 0; i+4 <= len(p); i += 4 {
			if binary.LittleEndian.Uint32(p[i:]) == recordMagic {
				parts = append(parts, p[start:i])
				start = i + 4
			}
		}
		parts = append(parts, p[start:])
		for j, part := range parts {
			cflag := uint32(0)
			if len(parts) > 1 {
				cflag = 2
				if j == 0 {
					cflag = 1
				} else if j == len(parts)-1 {
					cflag = 3
				}
			}
			binary.Write(&rec, binary.LittleEndian, uint32(recordMagic))
			binary.Write(&rec, binary.LittleEndian, cflag<<29|uint32(len(part)))
			rec.Write(part)
			rec.Write(make([]byte, (4-len(part)%4)%4))
		}
	}
	put(t, filepath.Join(dir, "train.rec"), rec.Bytes())
	putText(t, filepath.Join(dir, "train.idx"), idx...)
}

func irPayload(flag uint32, label float32, labels []float32, img []byte) []byte {
	b := binary.LittleEndian.AppendUint32(nil, flag)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(label))
	b = binary.LittleEndian.AppendUint64(b, 0)
	b = binary.LittleEndian.AppendUint64(b, 0)
	for _, l := range labels {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(l))
	}
	return append(b, img...)
}

func TestCASIARecordIO(t *testing.T) {
	dir := t.TempDir()
	magicLabel := math.Float32frombits(recordMagic) // forces a split record
	payloads := map[int][]byte{
		0: irPayload(2, 0, []float32{4, 6}, nil), // images are keys 1..3
		1: irPayload(0, 0, nil, jpegBytes(1)),
		2: irPayload(2, 0, []float32{1, magicLabel}, jpegBytes(2)),
		3: irPayload(0, 2, nil, jpegBytes(3)),
		4: irPayload(0, 0, nil, []byte("identity header, not an image")),
	}
	writeRec(t, dir, payloads, []int{0, 1, 2, 3, 4})
	put(t, filepath.Join(dir, "property"), []byte("3,112,112\n"))
	fr, err := CASIAWebFace(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Rec.Close()
	if fmt.Sprint(fr.Keys) != "[1 2 3]" || fmt.Sprint(fr.Labels) != "[0 1 2]" || fr.NumClasses != 3 {
		t.Errorf("keys %v labels %v classes %d", fr.Keys, fr.Labels, fr.NumClasses)
	}
	p, err := fr.Rec.Read(2)
	if err != nil || !bytes.Equal(p, payloads[2]) {
		t.Fatalf("split record not re-joined: %v", err)
	}
	// A label beyond num_classes.
	put(t, filepath.Join(dir, "property"), []byte("2,112,112\n"))
	_, err = CASIAWebFace(dir, LoadOptions{})
	wantErr(t, "label ≥ num_classes", err, data.ErrUnknownClass, "train.rec", 0)
	// Truncated .rec: the index points past the end.
	put(t, filepath.Join(dir, "property"), []byte("3,112,112\n"))
	truncate(t, filepath.Join(dir, "train.rec"))
	_, err = CASIAWebFace(dir, LoadOptions{})
	wantErr(t, "truncated rec", err, data.ErrTruncated, "", -1)
}

// TestInsightfaceBinPython decodes pickles written by CPython 3.11's pickle module (protocols
// 2, 4, 5) and NumPy 1.24 (bins as uint8 arrays, protocols 2 and 4); see testdata/README.md.
// All five hold the same 4 images (JPEG, PNG, JPEG, PNG of 6×5 pixels) and issame [True, False].
func TestInsightfaceBinPython(t *testing.T) {
	var ref *BinPairs
	for _, f := range []string{"insightface_p2.bin", "insightface_p4.bin", "insightface_p5.bin", "insightface_numpy_p2.bin", "insightface_numpy_p4.bin"} {
		bp, err := LoadInsightfaceBin(filepath.Join("testdata", f), LoadOptions{Check: CheckDecode})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(bp.Images) != 4 || fmt.Sprint(bp.Same) != "[true false]" || len(bp.Images[0]) != 633 || len(bp.Images[1]) != 77 {
			t.Errorf("%s: %d images (sizes %d, %d), same %v", f, len(bp.Images), len(bp.Images[0]), len(bp.Images[1]), bp.Same)
		}
		if ref == nil {
			ref = bp
		} else {
			for i := range bp.Images {
				if !bytes.Equal(bp.Images[i], ref.Images[i]) {
					t.Errorf("%s: image %d differs from the protocol-2 file", f, i)
				}
			}
		}
	}
}

// TestCars196SciPyMat loads a cars_annos.mat-shaped file written by SciPy (../matv5/testdata),
// whose numbers are uint8/uint16 arrays as in the real file.
func TestCars196SciPyMat(t *testing.T) {
	root := t.TempDir()
	b, err := os.ReadFile(filepath.Join("..", "matv5", "testdata", "cars_annos_scipy.mat"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(root, "cars_annos.mat"), b)
	for i, f := range []string{"000001.jpg", "000002.jpg", "008145.jpg"} {
		put(t, filepath.Join(root, "car_ims", f), jpegBytes(i))
	}
	s, err := Cars196(root, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.Len() != 2 || s.Test.Len() != 1 || s.Test.Labels[0] != 98 || s.Test.BBoxes[0] != [4]int32{9, 1, 1000, 600} || s.Train.ClassNames[2] != "Ünïcode Car 2010" {
		t.Errorf("%v test %v %v names[2] %q", s, s.Test.Labels, s.Test.BBoxes, s.Train.ClassNames[2])
	}
}
