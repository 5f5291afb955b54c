//go:build onnx

package backend

import (
	"strings"
	"testing"
)

// TestONNXNeverDownloads: with no ONNX Runtime library given, "onnx:cpu" fails at once naming the
// variable to set, even where GOMLX_NO_AUTO_INSTALL was not set before the process started
// (compute-onnx reads it when it initialises; without dmlkit's switch it would download the latest
// ONNX Runtime from GitHub). Runs with -tags onnx.
func TestONNXNeverDownloads(t *testing.T) {
	t.Setenv("ONNXRUNTIME_SHARED_LIBRARY_PATH", "")
	_, err := NewWithConfig("onnx:cpu")
	if err == nil || !strings.Contains(err.Error(), "auto-installation is disabled") {
		t.Fatalf("err %v: want the library refused without a download", err)
	}
}
