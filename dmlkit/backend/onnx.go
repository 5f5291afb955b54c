//go:build onnx

package backend

// Built with -tags onnx: registers the ONNX Runtime backend ("onnx:cpu"); it needs the ORT shared
// library in ONNXRUNTIME_SHARED_LIBRARY_PATH.
import _ "github.com/gomlx/compute-onnx"
