package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestDataCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"data", "list"}, &out, &errb); code != 0 {
		t.Fatalf("data list: exit %d: %s", code, errb.String())
	}
	for _, name := range []string{"omniglot", "mnist", "fashion-mnist", "cub", "cars196", "sop", "inshop"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("data list lacks %q:\n%s", name, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"data", "verify", "omniglot", "--root", t.TempDir()}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "images_background.npz") {
		t.Errorf("verify of an empty dir: exit %d, stderr %q; want exit 1 naming the missing file", code, errb.String())
	}
	const shared = "../../../shared/data/omniglot"
	if _, err := os.Stat(shared); err != nil {
		t.Skip("no ../shared/data/omniglot")
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"data", "verify", "omniglot", "--root", shared}, &out, &errb); code != 0 {
		t.Fatalf("verify shared Omniglot: exit %d: %s", code, errb.String())
	}
	// The published sha256 values (shared/data/omniglot/README.md) and the standard split sizes.
	for _, want := range []string{"images_background.npz: checksum OK", "images_evaluation.npz: checksum OK", "19280", "13180"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("verify output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDataCIFAR10Command: cifar10 is listed, info gives the binary release's URL and md5, verify of
// an empty directory names the files it looks for, and verify without --root finds
// ../shared/data/cifar10 (skipped without it, and with -short: it decodes all 60,000 images),
// checks its sha256 against SHA256SUMS and counts the standard 50,000 / 10,000 images.
func TestDataCIFAR10Command(t *testing.T) {
	code, out, errs := runCLI("data", "list")
	if code != 0 || !strings.Contains(out, "cifar10 ") {
		t.Fatalf("data list: exit %d, %q %q", code, out, errs)
	}
	code, out, _ = runCLI("data", "info", "cifar10")
	if code != 0 || !strings.Contains(out, "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz (md5 c32a1d4ab5d03f1284b67883e8d87530)") {
		t.Errorf("data info cifar10: exit %d:\n%s", code, out)
	}
	code, _, errs = runCLI("data", "verify", "cifar10", "--root", t.TempDir())
	if code != 1 || !strings.Contains(errs, "cifar10-jpeg.tar.gz") || !strings.Contains(errs, "cifar-10-binary.tar.gz") {
		t.Errorf("verify of an empty dir: exit %d, stderr %q", code, errs)
	}
	if testing.Short() {
		t.Skip("verify decodes all 60,000 images")
	}
	if _, err := os.Stat("../../../shared/data/cifar10/cifar10-jpeg.tar.gz"); err != nil {
		t.Skip("no ../shared/data/cifar10")
	}
	code, out, errs = runCLI("data", "verify", "cifar10")
	if code != 0 {
		t.Fatalf("verify cifar10: exit %d: %s", code, errs)
	}
	for _, want := range []string{"cifar10-jpeg.tar.gz: sha256 OK (SHA256SUMS)", "train    50000 images", "test     10000 images", "cifar10 in "} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
}
