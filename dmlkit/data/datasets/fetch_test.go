package datasets

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func tgz(t *testing.T, files map[string][]byte) []byte {
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	tw := tar.NewWriter(z)
	for name, data := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg})
		tw.Write(data)
	}
	tw.Close()
	z.Close()
	return b.Bytes()
}

func zipBytes(files map[string][]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, data := range files {
		w, _ := zw.Create(name)
		w.Write(data)
	}
	zw.Close()
	return b.Bytes()
}

// TestFetch serves files from a local httptest server (no network): checksums are verified,
// archives extracted, a bad checksum deletes the download, present files are not re-fetched,
// and archive entries escaping the directory are refused.
func TestFetch(t *testing.T) {
	plain := []byte("hello dmlkit")
	arch := tgz(t, map[string][]byte{"CUB_200_2011/images.txt": []byte("1 a/b.jpg\n")})
	zp := zipBytes(map[string][]byte{"SOP/Ebay_train.txt": []byte("x")})
	evil := tgz(t, map[string][]byte{"../evil.txt": []byte("x")})
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/plain":
			w.Write(plain)
		case "/a.tgz":
			w.Write(arch)
		case "/z.zip":
			w.Write(zp)
		case "/evil.tgz":
			w.Write(evil)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	sha := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	md := func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }
	src := &Source{Name: "test", Remotes: []Remote{
		{URL: srv.URL + "/plain", File: "plain.txt", SHA256: sha(plain)},
		{URL: srv.URL + "/a.tgz", File: "a.tgz", MD5: md(arch), Extract: true},
		{URL: srv.URL + "/z.zip", File: "z.zip", Extract: true},
	}}
	dir := t.TempDir()
	notes, err := Fetch(context.Background(), src, dir, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "CUB_200_2011", "images.txt")); string(b) != "1 a/b.jpg\n" {
		t.Errorf("tgz not extracted: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "SOP", "Ebay_train.txt")); err != nil {
		t.Errorf("zip not extracted: %v", err)
	}
	if !strings.Contains(strings.Join(notes, "\n"), "z.zip: downloaded, no checksum known") {
		t.Errorf("notes %q", notes)
	}
	before := hits.Load()
	if _, err := Fetch(context.Background(), src, dir, srv.Client(), nil); err != nil {
		t.Fatal(err)
	}
	// plain and a.tgz have checksums and are present → only z.zip (no checksum) is re-fetched.
	if got := hits.Load() - before; got != 1 {
		t.Errorf("second fetch made %d requests, want 1", got)
	}
	bad := &Source{Name: "bad", Remotes: []Remote{{URL: srv.URL + "/plain", File: "p2.txt", SHA256: strings.Repeat("0", 64)}}}
	if _, err := Fetch(context.Background(), bad, dir, srv.Client(), nil); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("bad checksum: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "p2.txt")); err == nil {
		t.Error("file with a bad checksum was kept")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*p2.txt*")); len(left) > 0 {
		t.Errorf("partial download was kept: %v", left)
	}
	// A stale leftover of an earlier attempt under the old fixed name (here a directory) is not in
	// the way: the download goes to a uniquely named temporary file (failed before: "is a directory").
	must := os.MkdirAll(filepath.Join(dir, "p3.txt.part"), 0o755)
	if must != nil {
		t.Fatal(must)
	}
	stale := &Source{Name: "stale", Remotes: []Remote{{URL: srv.URL + "/plain", File: "p3.txt", SHA256: sha(plain)}}}
	if _, err := Fetch(context.Background(), stale, dir, srv.Client(), nil); err != nil {
		t.Errorf("fetch beside a stale p3.txt.part: %v", err)
	} else if b, _ := os.ReadFile(filepath.Join(dir, "p3.txt")); string(b) != string(plain) {
		t.Errorf("p3.txt = %q, want %q", b, plain)
	}
	ev := &Source{Name: "evil", Remotes: []Remote{{URL: srv.URL + "/evil.tgz", File: "evil.tgz", Extract: true}}}
	if _, err := Fetch(context.Background(), ev, dir, srv.Client(), nil); err == nil || !strings.Contains(err.Error(), "escapes") {
		t.Errorf("escaping archive: %v", err)
	}
	nf := &Source{Name: "nf", Remotes: []Remote{{URL: srv.URL + "/nope", File: "nope"}}}
	if _, err := Fetch(context.Background(), nf, dir, srv.Client(), nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("404: %v", err)
	}
	if _, err := Fetch(context.Background(), Sources["inshop"], dir, srv.Client(), nil); err == nil || !strings.Contains(err.Error(), "Google Drive") {
		t.Errorf("manual source: %v", err)
	}
	if _, err := LookupSource("imagenet"); err == nil {
		t.Error("unknown source found")
	}
}

// TestVerify checks local copies: MNIST from the GoMNIST module (checksums must match the
// recorded sha256 values) and a CUB fixture, whose size differs from the standard split.
func TestVerify(t *testing.T) {
	if dir, err := FindMNIST(); err == nil {
		rep, err := Verify(Sources["mnist"], dir)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Counts["train"] != 60000 || strings.Count(strings.Join(rep.Notes, "\n"), "checksum OK") != 4 {
			t.Errorf("mnist: %+v", rep)
		}
	}
	root := cubFixture(t)
	_, err := Verify(Sources["cub"], root)
	if err == nil || !strings.Contains(err.Error(), "train has 4 images, the standard split has 5864") {
		t.Errorf("cub fixture: %v", err)
	}
}
