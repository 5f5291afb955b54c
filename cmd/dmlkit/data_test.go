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
