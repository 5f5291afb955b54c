package train

import "path/filepath"

// ReadHistory reads the evaluation records of a run directory (metrics.jsonl, one [EvalRecord]
// per line, as written by [Run]) for plots and reports. Errors name the file and line.
func ReadHistory(runDir string) ([]EvalRecord, error) {
	return readJSONL[EvalRecord](filepath.Join(runDir, "metrics.jsonl"))
}
