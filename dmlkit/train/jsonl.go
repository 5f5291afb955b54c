package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// readJSONL reads a file of one JSON value per line (metrics.jsonl, steplog.jsonl), skipping blank
// lines. Errors name the file and the line; a missing file is an error that wraps fs.ErrNotExist.
func readJSONL[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("train: %s:%d: %w", path, line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("train: %s: %w", path, err)
	}
	return out, nil
}
