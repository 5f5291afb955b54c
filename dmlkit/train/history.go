package train

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// ReadHistory reads the evaluation records of a run directory (metrics.jsonl, one [EvalRecord]
// per line, as written by [Run]) for plots and reports. Errors name the file and line.
func ReadHistory(runDir string) ([]EvalRecord, error) {
	path := filepath.Join(runDir, "metrics.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("train: %w", err)
	}
	defer f.Close()
	var out []EvalRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r EvalRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("train: %s:%d: %w", path, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("train: %s: %w", path, err)
	}
	return out, nil
}
