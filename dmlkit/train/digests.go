package train

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
	"github.com/dmlkit/dmlkit/dmlkit/models"
)

// weightDigests returns the SHA-256 (hex) of each file a model's weights come from, by
// configuration field: "model.pretrained" (the .tflite or .onnx file, which must match the
// SHA256SUMS beside it where that lists it, [checksum.File]) and "model.init_from" (the
// checkpoint file it names or, for a run directory, its newest checkpoint). It is nil when the
// model reads no file. Errors name the field and the file; a damaged listed file gives both
// digests.
func weightDigests(m models.Config) (map[string]string, error) {
	var out map[string]string
	if m.Pretrained != "" {
		d, err := checksum.File(m.Pretrained)
		if err != nil {
			return nil, fmt.Errorf("model.pretrained: %w", err)
		}
		out = map[string]string{"model.pretrained": d}
	}
	if m.InitFrom != "" {
		p, err := initFromCheckpoint(m.InitFrom)
		if err != nil {
			return nil, err
		}
		d, err := checksum.Digest(p)
		if err != nil {
			return nil, fmt.Errorf("model.init_from: %w", err)
		}
		if out == nil {
			out = map[string]string{}
		}
		out["model.init_from"] = d
	}
	return out, nil
}
