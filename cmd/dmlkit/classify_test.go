package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClassifyCommand runs `dmlkit classify` on the Coral MobileNetV2 and two reference images
// with nearest resizing, checking the top-1 label and its probability against
// ../shared/weights/coral/README.md (Egyptian cat 0.77, chickadee 0.99, within 0.02: the README
// rounds to two digits), that flags may follow the images, that --top bounds the list, and the
// errors for a missing file and a bad --resize.
func TestClassifyCommand(t *testing.T) {
	const coral = "../../../shared/weights/coral"
	model := filepath.Join(coral, "mobilenet_v2_1.0_224_quant.tflite")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("no ../shared/weights/coral: %v", err)
	}
	code, stdout, stderr := runCLI("classify", "--weights", model, "--top", "2",
		filepath.Join(coral, "cat.bmp"), filepath.Join(coral, "bird.bmp"), "--resize", "nearest")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Log(stdout)
	line := regexp.MustCompile(`(?m)^  ([0-9.]+)\s+\d+\s+(.+)$`)
	rows := line.FindAllStringSubmatch(stdout, -1)
	if len(rows) != 4 {
		t.Fatalf("want 2 labels for each of 2 images, got %d lines:\n%s", len(rows), stdout)
	}
	for i, w := range []struct {
		label string
		p     float64
	}{{"Egyptian cat", 0.77}, {"chickadee", 0.99}} {
		r := rows[2*i]
		p, _ := strconv.ParseFloat(r[1], 64)
		if r[2] != w.label || p < w.p-0.02 || p > w.p+0.02 {
			t.Errorf("image %d: top-1 %q %.4f, want %q %.2f ± 0.02", i, r[2], p, w.label, w.p)
		}
	}
	if !strings.Contains(stdout, "nearest resize") {
		t.Errorf("the output does not say the resize: %s", stdout)
	}
	for _, bad := range [][]string{
		{"classify", "--weights", filepath.Join(t.TempDir(), "none.tflite"), filepath.Join(coral, "cat.bmp")},
		{"classify", "--weights", model, "--resize", "cubic", filepath.Join(coral, "cat.bmp")},
		{"classify", "--weights", model, filepath.Join(coral, "missing.bmp")},
	} {
		if code, _, stderr := runCLI(bad...); code != 1 || !strings.Contains(stderr, "dmlkit classify:") {
			t.Errorf("%v: exit %d, stderr %q", bad[1:], code, stderr)
		}
	}
}
