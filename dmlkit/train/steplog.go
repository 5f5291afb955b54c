package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

// stepLogFile is the step log of a run directory: one [StepRecord] per line.
const stepLogFile = "steplog.jsonl"

// stepLogLoss is the step log's name of the training loss (of the logged step's batch).
const stepLogLoss = "loss"

// StepLog holds the loss diagnostics logged every log.every_steps optimiser steps: Steps are the
// 1-based step numbers (N, 2N, … counted after the step's update), and Values[name][i] is the
// value of name at Steps[i], computed on that step's training batch with the parameters before
// its update. Names: "loss" (the step's loss, the one reported by Progress), then those of the
// loss's diagnostics ([losses.Diagnoser]: e.g. "L_e", "L_p", "hard_triplets", "triplets" for
// cit; "loss/<term>" and "<term>/<name>" for a sum of terms); a loss without diagnostics logs
// "loss" only. A value that was not finite is NaN.
type StepLog struct {
	Steps  []int
	Values map[string][]float64
}

// StepRecord is one line of steplog.jsonl; a non-finite value is written as null.
type StepRecord struct {
	Step   int                 `json:"step"`
	Values map[string]*float64 `json:"values"`
}

// Len returns the number of logged steps.
func (l *StepLog) Len() int {
	if l == nil {
		return 0
	}
	return len(l.Steps)
}

// add appends the values of step; a name first seen now has NaN at the earlier steps, one
// missing now gets NaN, so every Values slice stays as long as Steps.
func (l *StepLog) add(step int, values map[string]float64) {
	if l.Values == nil {
		l.Values = map[string][]float64{}
	}
	n := len(l.Steps)
	for k, v := range values {
		s := l.Values[k]
		for len(s) < n {
			s = append(s, math.NaN())
		}
		l.Values[k] = append(s, v)
	}
	for k, s := range l.Values {
		if len(s) == n {
			l.Values[k] = append(s, math.NaN())
		}
	}
	l.Steps = append(l.Steps, step)
}

func (r StepRecord) values() map[string]float64 {
	m := make(map[string]float64, len(r.Values))
	for k, v := range r.Values {
		if v == nil {
			m[k] = math.NaN()
		} else {
			m[k] = *v
		}
	}
	return m
}

func newStepRecord(step int, values map[string]float64) StepRecord {
	rec := StepRecord{Step: step, Values: make(map[string]*float64, len(values))}
	for k, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			rec.Values[k] = nil
		} else {
			rec.Values[k] = &v
		}
	}
	return rec
}

// ReadStepLog reads the step log of a run directory (steplog.jsonl, written by [Run] with
// log.every_steps > 0). Errors name the file and line.
func ReadStepLog(runDir string) (*StepLog, error) {
	recs, err := readStepRecords(filepath.Join(runDir, stepLogFile))
	if err != nil {
		return nil, err
	}
	l := &StepLog{}
	for _, r := range recs {
		l.add(r.Step, r.values())
	}
	return l, nil
}

func readStepRecords(path string) ([]StepRecord, error) { return readJSONL[StepRecord](path) }

// truncateStepLog drops the records of steplog.jsonl in dir after step (those a resumed run,
// continuing from the checkpoint of that step, logs again), rewriting the file atomically
// (dmlkit/atomicfile); a missing file is left missing.
func truncateStepLog(dir string, step int) error {
	path := filepath.Join(dir, stepLogFile)
	recs, err := readStepRecords(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var buf bytes.Buffer
	for _, r := range recs {
		if r.Step > step {
			continue
		}
		b, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("train: %s: %w", path, err)
		}
		buf.Write(append(b, '\n'))
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	return nil
}

// logStep records the loss and the diagnostics of the step just done (r.st.Step, 1-based) in
// Result.StepLog and steplog.jsonl when log.every_steps divides it.
func (r *runner) logStep(loss float64) error {
	n := r.cfg.Log.EverySteps
	if n <= 0 || r.st.Step%n != 0 {
		return nil
	}
	values := map[string]float64{stepLogLoss: loss}
	if r.eng.diagnosing {
		for i, name := range r.eng.diagNames {
			values[name] = r.eng.diagValues[i]
		}
	}
	if r.res.StepLog == nil {
		r.res.StepLog = &StepLog{}
	}
	r.res.StepLog.add(r.st.Step, values)
	return appendJSONL(filepath.Join(r.out, stepLogFile), newStepRecord(r.st.Step, values))
}
