package backend

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestInstallOnnxRuntimeScript runs scripts/install-onnxruntime.sh offline (--from) on generated
// onnxruntime-node tarballs: the library is extracted to --dest and the export line printed; with
// the pinned version, a library whose sha256 is not the pinned one is refused. The `npm pack`
// download itself is not run here (no network in tests).
func TestInstallOnnxRuntimeScript(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the script's pinned checksum is for linux/x64")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "install-onnxruntime.sh"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lib := []byte("not really a shared library")
	tgz := filepath.Join(dir, "onnxruntime-node-test.tgz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	name := "package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
	tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(lib))})
	tw.Write(lib)
	tw.Close()
	zw.Close()
	if err := os.WriteFile(tgz, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	run := func(version, dest string) (string, error) {
		cmd := exec.Command("bash", script, "--from", tgz, "--dest", dest)
		cmd.Env = append(os.Environ(), "ORT_NPM_VERSION="+version)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dest := filepath.Join(dir, "lib")
	out, err := run("0.0.0-test", dest)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dest, "libonnxruntime.so.1"))
	if err != nil || !bytes.Equal(got, lib) {
		t.Errorf("installed library: %q, %v; want the tarball's member", got, err)
	}
	if want := "export ONNXRUNTIME_SHARED_LIBRARY_PATH=" + filepath.Join(dest, "libonnxruntime.so.1"); strings.TrimSpace(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	// The pinned version checks the library's sha256.
	out, err = run("1.30.0", filepath.Join(dir, "lib2"))
	if err == nil || !strings.Contains(out, "sha256") {
		t.Errorf("a library with the wrong checksum was accepted: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "lib2", "libonnxruntime.so.1")); err == nil {
		t.Error("the refused library was installed")
	}
}
