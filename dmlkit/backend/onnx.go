//go:build onnx

package backend

// Built with -tags onnx: registers the ONNX Runtime backend ("onnx:cpu"); it needs the ORT shared
// library in ONNXRUNTIME_SHARED_LIBRARY_PATH (or "onnx:/abs/path/libonnxruntime.so").

import onnx "github.com/gomlx/compute-onnx"

// compute-onnx reads GOMLX_NO_AUTO_INSTALL once, when its package initialises, and otherwise
// downloads the latest ONNX Runtime from GitHub when no library is given; dmlkit never downloads
// (issue 47: New's Setenv came too late), so the download is switched off here.
func init() { onnx.EnableAutoInstall(false) }
