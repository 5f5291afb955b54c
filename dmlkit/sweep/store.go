package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Record is the stored result of one run: one JSON object on one line of a results file.
type Record struct {
	Hash    string         `json:"hash"`             // [Hash] of Config
	Paper   string         `json:"paper"`            // the spec's paper
	Scale   string         `json:"scale"`            // the scale the run belongs to
	Seed    int64          `json:"seed"`             // also inside Config
	Params  map[string]any `json:"params,omitempty"` // swept values, dotted keys
	Config  map[string]any `json:"config"`           // the full resolved configuration
	Metrics Metrics        `json:"metrics"`          // final scalar results
	// Failed, on the record of a run that failed in a way a rerun would repeat (the runner
	// returned a [*RunFailure], e.g. training diverged), says why, and FailedStep names the step
	// (0: unknown). Such a record has no metrics; [Select], [GroupBy] and claim verdicts leave it
	// out (verdicts count it), and a resumed sweep skips it unless ExecOptions.RetryFailed.
	Failed     string `json:"failed,omitempty"`
	FailedStep int    `json:"failed_step,omitempty"`
	Series     Series `json:"series,omitempty"` // vectors for figures
	// Notes name results the run was asked for but left out, with the reason (Outcome.Notes).
	Notes   map[string]string `json:"notes,omitempty"`
	Timings Metrics           `json:"timings,omitempty"`
	Start   time.Time         `json:"start"`   // wall-clock start (UTC)
	Seconds float64           `json:"seconds"` // wall time of the run
	Env     map[string]any    `json:"env,omitempty"`
	// Digests holds the SHA-256 (hex) of the files the run's weights came from, by configuration
	// field ("model.pretrained": the .tflite or ONNX backbone, "model.init_from": the checkpoint).
	// It is provenance, not configuration: [Hash] does not see it, and records written before it
	// existed have none.
	Digests map[string]string `json:"digests,omitempty"`
	// Measured lists the measurements a rerun added to the record ([Remeasure]), merged by
	// [Store.Load] from the store's measurement files; its metrics and series are in Metrics and
	// Series. Not stored in the record's line.
	Measured []Measurement `json:"-"`
	// Source is where [Store.Load] read the record ("file:line"); empty for a record not read
	// from a store. It is not stored: errors about a record's values name it.
	Source string `json:"-"`
}

// Where names the record in an error: its hash, seed and scale, and the file and line it was
// read from when known.
func (r *Record) Where() string {
	s := fmt.Sprintf("record %s (seed %d, scale %s)", r.Hash, r.Seed, r.Scale)
	if r.Source != "" {
		s += " at " + r.Source
	}
	return s
}

// Value returns a record's value for a grouping or filter key: "scale", "paper", "seed" and
// "hash" address the record's own fields, "params.K" the swept value K, anything else the dotted
// key in Config.
func (r *Record) Value(key string) (any, bool) {
	switch key {
	case "scale":
		return r.Scale, true
	case "paper":
		return r.Paper, true
	case "seed":
		return r.Seed, true
	case "hash":
		return r.Hash, true
	}
	return Get(r.Config, key)
}

// Metrics maps names to numbers. Unlike a plain map it survives JSON with NaN and ±Inf (a
// diverged run), which are written as the strings "NaN", "+Inf", "-Inf".
type Metrics map[string]float64

// Series maps names to vectors, with the same treatment of non-finite values as [Metrics].
type Series map[string][]float64

func encodeFloat(buf *bytes.Buffer, f float64) {
	switch {
	case math.IsNaN(f):
		buf.WriteString(`"NaN"`)
	case math.IsInf(f, 1):
		buf.WriteString(`"+Inf"`)
	case math.IsInf(f, -1):
		buf.WriteString(`"-Inf"`)
	default:
		buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	}
}

// decodeFloat decodes one JSON value of a [Metrics] or [Series]: a number, or one of the strings
// encodeFloat writes for non-finite values. A number is parsed by strconv.ParseFloat, as
// encoding/json parses it, without a decoder's set-up per value (a store of a few hundred records
// holds millions of series values); anything else, and a number ParseFloat refuses (out of
// range), takes encoding/json's path, which gives its value or its error.
func decodeFloat(raw json.RawMessage) (float64, error) {
	if len(raw) > 0 && (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return f, nil
		}
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, err
		}
		switch s {
		case "NaN":
			return math.NaN(), nil
		case "+Inf", "Inf":
			return math.Inf(1), nil
		case "-Inf":
			return math.Inf(-1), nil
		}
		return 0, fmt.Errorf("not a number: %q", s)
	}
	var f float64
	err := json.Unmarshal(raw, &f)
	return f, err
}

// decodeFloats decodes raw, a JSON array that the caller's decoder has already checked to be
// well-formed JSON, element by element with [decodeFloat]. It scans the array itself instead of
// decoding it into one json.RawMessage per element; an element that is an array or an object
// (which no [Series] holds) falls back to that decoding, which reports it as before.
func decodeFloats(raw json.RawMessage) ([]float64, error) {
	b := skipSpace(raw)
	if len(b) == 0 || b[0] != '[' {
		return decodeFloatsSlow(raw)
	}
	b = skipSpace(b[1:])
	out := make([]float64, 0, bytes.Count(raw, []byte{','})+1)
	if len(b) > 0 && b[0] == ']' {
		return out, nil
	}
	for i := 0; len(b) > 0; i++ {
		end := 0
		switch b[0] {
		case '[', '{':
			return decodeFloatsSlow(raw)
		case '"':
			end = 1
			for end < len(b) && b[end] != '"' {
				if b[end] == '\\' {
					end++
				}
				end++
			}
			end++ // the closing quote
		default:
			for end < len(b) && !endsValue(b[end]) {
				end++
			}
		}
		if end > len(b) {
			return decodeFloatsSlow(raw)
		}
		f, err := decodeFloat(b[:end])
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, f)
		b = skipSpace(b[end:])
		switch {
		case len(b) > 0 && b[0] == ',':
			b = skipSpace(b[1:])
		case len(b) > 0 && b[0] == ']':
			return out, nil
		default:
			return decodeFloatsSlow(raw)
		}
	}
	return decodeFloatsSlow(raw)
}

// decodeFloatsSlow is [decodeFloats] through one json.RawMessage per element.
func decodeFloatsSlow(raw json.RawMessage) ([]float64, error) {
	var vs []json.RawMessage
	if err := json.Unmarshal(raw, &vs); err != nil {
		return nil, fmt.Errorf(": %w", err)
	}
	fs := make([]float64, len(vs))
	for i, v := range vs {
		f, err := decodeFloat(v)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		fs[i] = f
	}
	return fs, nil
}

// endsValue reports whether c ends a number or a literal inside a JSON array.
func endsValue(c byte) bool {
	return c == ',' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// skipSpace drops JSON's white space from the front of b.
func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	return b
}

// MarshalJSON implements json.Marshaler.
func (m Metrics) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range SortedKeys(m) {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		encodeFloat(&buf, m[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Metrics, len(raw))
	for k, v := range raw {
		f, err := decodeFloat(v)
		if err != nil {
			return fmt.Errorf("metric %q: %w", k, err)
		}
		out[k] = f
	}
	*m = out
	return nil
}

// MarshalJSON implements json.Marshaler.
func (s Series) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range SortedKeys(s) {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteString(":[")
		for j, f := range s[k] {
			if j > 0 {
				buf.WriteByte(',')
			}
			encodeFloat(&buf, f)
		}
		buf.WriteByte(']')
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *Series) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Series, len(raw))
	for k, v := range raw {
		fs, err := decodeFloats(v)
		if err != nil {
			return fmt.Errorf("series %q%w", k, err)
		}
		out[k] = fs
	}
	*s = out
	return nil
}

// Store is a directory of JSON-lines results files, one per scale (<scale>.jsonl).
//
// Guarantee: [Store.Append] writes a record as a single line with one write(2) on a file opened
// with O_APPEND while holding an exclusive flock(2) on it, then fsyncs. Concurrent appenders
// (worker goroutines, several processes or array tasks on one machine or on a file system with
// working flock) therefore never interleave or lose lines. A process killed mid-write can leave
// at most one incomplete last line; the next Append first terminates such a line, and
// [Store.Load] skips (and reports) lines that do not parse, so a run whose record was cut off is
// simply not counted as done and runs again on resume.
type Store struct {
	Dir string
	// SkipSeries makes [Store.Load] leave every record's Series nil (measurements' too): a sweep plans and runs from
	// the records' configurations and metrics alone, and the series (per-step curves, sampled
	// distances) are most of a store's bytes and of the time to read it. The series are still
	// checked to be well-formed JSON.
	SkipSeries bool
}

// NewStore returns the store in dir (created on the first Append).
func NewStore(dir string) *Store { return &Store{Dir: dir} }

// File is the results file of a scale.
func (s *Store) File(scale string) string { return s.scaleFile(scale, ".jsonl") }

// scaleFile is the store's file of a scale with the extension ext ("results" for no scale).
func (s *Store) scaleFile(scale, ext string) string {
	if scale == "" {
		scale = "results"
	}
	return filepath.Join(s.Dir, scale+ext)
}

// Append adds rec to the file of its scale atomically (see [Store]).
func (s *Store) Append(rec *Record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("experiments: encoding record %s: %w", rec.Hash, err)
	}
	return appendLine(s.Dir, s.File(rec.Scale), line)
}

// appendLine appends one line (without its newline) to path under dir, holding the file's lock,
// and syncs it; a previous writer's unfinished line is ended first, so this line stays whole.
func appendLine(dir, path string, line []byte) error {
	line = append(line, '\n')
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("experiments: locking %s: %w", path, err)
	}
	defer unlockFile(f)
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if st.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, st.Size()-1); err != nil {
			return fmt.Errorf("experiments: %s: %w", path, err)
		}
		if last[0] != '\n' {
			// A previous writer died mid-line: end that line so this record stays whole.
			line = append([]byte{'\n'}, line...)
		}
	}
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("experiments: appending to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("experiments: syncing %s: %w", path, err)
	}
	return nil
}

// LoadReport tells what [Store.Load] read and what it skipped.
type LoadReport struct {
	Files      []string // files read, sorted
	Records    int      // records returned
	Bad        []string // "file:line: reason" for lines that did not parse
	Duplicates []string // "file:line: scale/hash" for repeated (scale, hash) pairs; the first is kept
	Orphans    []string // "scale/hash" of measurements whose record is absent or failed (left out)
}

// Load reads every *.jsonl file of the store (a missing directory holds no records). Records are
// returned in file order, files sorted by name; a (scale, hash) pair seen twice keeps its first
// record, except that a failed record ([Record.Failed]) is replaced by a later record of its pair
// (a retried run: RetryFailed), in its place and without counting as a duplicate. The
// measurements of the store's *.measurements files ([Measurement], [Remeasure]) are then merged
// into their records: keys a record lacks, and [Record.Measured].
func (s *Store) Load() ([]Record, *LoadReport, error) {
	rep := &LoadReport{}
	files, err := filepath.Glob(filepath.Join(s.Dir, "*.jsonl"))
	if err != nil {
		return nil, nil, fmt.Errorf("experiments: %w", err)
	}
	sort.Strings(files)
	seen := map[string]int{} // key → index in out
	var out []Record
	for _, path := range files {
		rep.Files = append(rep.Files, path)
		recs, err := readRecords(path, rep, s.SkipSeries)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range recs {
			key := r.rec.Scale + "/" + r.rec.Hash
			if i, ok := seen[key]; ok {
				if out[i].Failed != "" {
					out[i] = r.rec // a retry of a failed run
				} else {
					rep.Duplicates = append(rep.Duplicates, fmt.Sprintf("%s:%d: %s", path, r.line, key))
				}
				continue
			}
			seen[key] = len(out)
			out = append(out, r.rec)
		}
	}
	ms, err := s.loadMeasurements(rep)
	if err != nil {
		return nil, nil, err
	}
	mergeMeasurements(out, ms, rep)
	if s.SkipSeries {
		for i := range out {
			out[i].Series = nil // those the measurements added
		}
	}
	rep.Records = len(out)
	return out, rep, nil
}

type lineRecord struct {
	rec  Record
	line int
}

// recordNoSeries decodes a record line without its series (Store.SkipSeries): its Series field
// shadows the embedded record's, and skipJSON decodes nothing.
type recordNoSeries struct {
	Record
	Series skipJSON `json:"series,omitempty"`
}

// skipJSON is a JSON value read and dropped.
type skipJSON struct{}

func (skipJSON) UnmarshalJSON([]byte) error { return nil }

func readRecords(path string, rep *LoadReport, skipSeries bool) ([]lineRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 1<<16)
	var out []lineRecord
	for n := 1; ; n++ {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var r Record
			var jerr error
			if skipSeries {
				var lite recordNoSeries
				jerr = json.Unmarshal(line, &lite)
				r = lite.Record
			} else {
				jerr = json.Unmarshal(line, &r)
			}
			if jerr != nil {
				rep.Bad = append(rep.Bad, fmt.Sprintf("%s:%d: %v", path, n, jerr))
			} else if r.Hash == "" {
				rep.Bad = append(rep.Bad, fmt.Sprintf("%s:%d: record without a hash", path, n))
			} else if h, herr := Hash(r.Config); herr != nil || h != r.Hash {
				// An edited configuration (or hash) would be reported under results it did not
				// produce, and count as the stored run of a configuration it is not.
				why := fmt.Sprintf("its config hashes to %s", h)
				if herr != nil {
					why = herr.Error()
				}
				rep.Bad = append(rep.Bad, fmt.Sprintf("%s:%d: record %s: field \"config\" does not match field \"hash\" (%s; edited by hand?)", path, n, r.Hash, why))
			} else {
				r.Source = fmt.Sprintf("%s:%d", path, n)
				out = append(out, lineRecord{r, n})
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("experiments: reading %s: %w", path, err)
		}
	}
	return out, nil
}

// Done returns the set of hashes of the given scale that have a record (failed ones included).
func Done(records []Record, scale string) map[string]bool {
	out := map[string]bool{}
	for _, r := range records {
		if r.Scale == scale {
			out[r.Hash] = true
		}
	}
	return out
}

// FailedRuns returns the hashes of the given scale whose record is marked failed, with the reason.
func FailedRuns(records []Record, scale string) map[string]string {
	out := map[string]string{}
	for _, r := range records {
		if r.Scale == scale && r.Failed != "" {
			out[r.Hash] = r.Failed
		}
	}
	return out
}

// SweepLockFile is the file in a results directory that [Store.LockSweep] locks.
const SweepLockFile = ".sweep.lock"

// LockedError is the error of [Store.LockSweep] when another sweep holds the results directory.
type LockedError struct {
	Dir     string
	Holders []string // "PID 123 on host (since 2006-01-02T15:04:05Z[, shard 1 of 4])", as the holders wrote them
}

func (e *LockedError) Error() string {
	who := "another sweep (its PID is not recorded)"
	if len(e.Holders) > 0 {
		who = "another sweep: " + strings.Join(e.Holders, "; ")
	}
	return fmt.Sprintf("experiments: results directory %s is in use by %s; two sweeps on one results directory would run and store the same runs twice", e.Dir, who)
}

// ShardCountError is the error of [Store.LockSweep] when a shard (Of > 1) finds the results
// directory held by shards of a different shard count: shards of different --of counts split the
// runs differently, so they would run overlapping points. It is returned at once, also with Wait.
type ShardCountError struct {
	Dir       string
	Index, Of int      // this process's shard
	Holders   []string // the other count's shards, "PID 123 on host (since …, shard 1 of 3)"
}

func (e *ShardCountError) Error() string {
	return fmt.Sprintf("experiments: results directory %s is held by a sweep sharded with another --of: %s; this process is shard %d of %d (--index %d --of %d). Shards of different --of counts split the runs differently and would run overlapping points: give every shard of the sweep the same --of, or start this one after that sweep has finished",
		e.Dir, strings.Join(e.Holders, "; "), e.Index, e.Of, e.Index, e.Of)
}

// SweepLock is held by one sweep on a results directory; see [Store.LockSweep].
type SweepLock struct {
	files []*os.File
	extra string // the shard part of the holder line (", shard 1 of 4"), for setWaiting
}

// waitingNote ends the holder line of a shard that waits for pending points
// ([SweepOptions.WaitPending]); [Store.OtherShardsRunning] does not count such shards.
const waitingNote = ", waiting for pending points"

// setWaiting rewrites a shard's holder line with or without [waitingNote].
func (l *SweepLock) setWaiting(waiting bool) {
	if l == nil || len(l.files) < 2 {
		return
	}
	extra := l.extra
	if waiting {
		extra += waitingNote
	}
	_ = writeHolder(l.files[len(l.files)-1], extra)
}

// Unlock releases the lock (and clears the holder it wrote). It may be called more than once.
func (l *SweepLock) Unlock() {
	if l == nil {
		return
	}
	for i := len(l.files) - 1; i >= 0; i-- {
		f := l.files[i]
		_ = f.Truncate(0)
		unlockFile(f)
		f.Close()
	}
	l.files = nil
}

// LockOptions configures [Store.LockSweep].
type LockOptions struct {
	Index, Of int                    // the shard (Of > 1): shards of one sweep may run at once
	Wait      bool                   // wait for the holder instead of failing
	Waiting   func(err *LockedError) // with Wait: called once, when the lock is busy
	Poll      time.Duration          // with Wait: how often to try again; default 200 ms
}

// LockSweep takes the lock a sweep holds on the results directory for its whole duration, so
// that two processes never run (and store) the same runs at once. An unsharded sweep takes the
// directory exclusively (flock(2) on Dir/.sweep.lock); a shard (Of > 1) shares the directory with
// the other shards and takes its own shard exclusively (Dir/.sweep.shard-I-of-N.lock), so the
// shards of an array job run side by side but never twice, and never beside an unsharded sweep.
// Shards of different shard counts split the runs differently: a shard that finds the directory
// held by shards with another Of fails at once, also with Wait, with a [*ShardCountError] naming
// both shard settings. The holder writes "PID n on HOST (since
// T)" into the lock file; a busy lock returns a [*LockedError] naming the directory and the
// holders, or with Wait polls until it is free or ctx is done. Locks are released by
// [SweepLock.Unlock] or when the process exits (kill -9 included). Without flock (non-Unix) the
// lock always succeeds.
func (s *Store) LockSweep(ctx context.Context, opt LockOptions) (*SweepLock, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	poll := opt.Poll
	if poll <= 0 {
		poll = 200 * time.Millisecond
	}
	told := false
	for {
		l, busy, err := s.tryLockSweep(opt)
		if err != nil || busy == nil {
			return l, err
		}
		if !opt.Wait {
			return nil, busy
		}
		if !told && opt.Waiting != nil {
			opt.Waiting(busy)
		}
		told = true
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %w)", busy, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func (s *Store) tryLockSweep(opt LockOptions) (*SweepLock, *LockedError, error) {
	l := &SweepLock{}
	fail := func(err error) (*SweepLock, *LockedError, error) {
		l.Unlock()
		return nil, nil, fmt.Errorf("experiments: locking results directory %s: %w", s.Dir, err)
	}
	busy := func() (*SweepLock, *LockedError, error) {
		l.Unlock()
		return nil, &LockedError{Dir: s.Dir, Holders: s.lockHolders()}, nil
	}
	sharded := opt.Of > 1
	f, err := os.OpenFile(filepath.Join(s.Dir, SweepLockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fail(err)
	}
	ok, err := tryLockFile(f, !sharded)
	if err != nil {
		f.Close()
		return fail(err)
	}
	if !ok {
		f.Close()
		return busy()
	}
	l.files = append(l.files, f)
	if !sharded {
		if err := writeHolder(f, ""); err != nil {
			return fail(err)
		}
		return l, nil, nil
	}
	// Shards share the directory lock: no unsharded sweep holds it, so what it names is stale.
	_ = f.Truncate(0)
	// Checking the other shard counts and taking this shard happen under a short exclusive lock
	// (Dir/.sweep.acquire.lock, waited for: it is held only while a shard starts), so two shards
	// of different counts starting at once never both start, and one's probe of a shard file is
	// never taken by the other for a holder.
	mf, err := os.OpenFile(filepath.Join(s.Dir, sweepAcquireFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fail(err)
	}
	if err := lockFile(mf); err != nil {
		mf.Close()
		return fail(err)
	}
	defer func() {
		unlockFile(mf)
		mf.Close()
	}()
	if other := s.otherCountHolders(opt.Of); len(other) > 0 {
		l.Unlock()
		return nil, nil, &ShardCountError{Dir: s.Dir, Index: opt.Index, Of: opt.Of, Holders: other}
	}
	sf, err := os.OpenFile(filepath.Join(s.Dir, fmt.Sprintf(".sweep.shard-%d-of-%d.lock", opt.Index, opt.Of)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fail(err)
	}
	if ok, err = tryLockFile(sf, true); err != nil || !ok {
		sf.Close()
		if err != nil {
			return fail(err)
		}
		return busy()
	}
	l.files = append(l.files, sf)
	l.extra = fmt.Sprintf(", shard %d of %d", opt.Index, opt.Of)
	if err := writeHolder(sf, l.extra); err != nil {
		return fail(err)
	}
	return l, nil, nil
}

func writeHolder(f *os.File, extra string) error {
	host, _ := os.Hostname()
	line := fmt.Sprintf("PID %d on %s (since %s%s)\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339), extra)
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(line), 0)
	return err
}

// lockHolders reads the holders written into the lock files of the directory.
func (s *Store) lockHolders() []string {
	files, _ := filepath.Glob(filepath.Join(s.Dir, ".sweep.shard-*.lock"))
	sort.Strings(files)
	var out []string
	for i, p := range append([]string{filepath.Join(s.Dir, SweepLockFile)}, files...) {
		b, err := os.ReadFile(p)
		line := strings.TrimSpace(string(b))
		if err != nil || line == "" || i > 0 && !heldElsewhere(p) {
			continue // shard files of shards that died keep their text but not their lock
		}
		out = append(out, line)
	}
	return out
}

// sweepAcquireFile is locked, briefly, while a shard checks the other shard counts and takes its
// shard ([Store.tryLockSweep]).
const sweepAcquireFile = ".sweep.acquire.lock"

// otherCountHolders lists the live shards of the directory whose shard count is not of, as their
// holders wrote them ("shard I of N" when a holder wrote nothing).
func (s *Store) otherCountHolders(of int) []string {
	files, _ := filepath.Glob(filepath.Join(s.Dir, ".sweep.shard-*-of-*.lock"))
	sort.Strings(files)
	var out []string
	for _, p := range files {
		var i, n int
		if _, err := fmt.Sscanf(filepath.Base(p), ".sweep.shard-%d-of-%d.lock", &i, &n); err != nil || n == of || !heldElsewhere(p) {
			continue
		}
		b, _ := os.ReadFile(p)
		line := strings.TrimSpace(string(b))
		if line == "" {
			line = fmt.Sprintf("shard %d of %d", i, n)
		}
		out = append(out, line)
	}
	return out
}

// heldElsewhere reports whether another open file holds a lock on path.
// OtherShardsRunning counts the shards of an Of-shard sweep on the directory, other than index,
// that hold their shard lock now (running processes, on this machine or, with a file system
// whose flock works across machines, on another) and are not themselves waiting for pending
// points ([SweepOptions.WaitPending]).
func (s *Store) OtherShardsRunning(index, of int) int {
	n := 0
	for i := 0; i < of; i++ {
		p := filepath.Join(s.Dir, fmt.Sprintf(".sweep.shard-%d-of-%d.lock", i, of))
		if i == index || !heldElsewhere(p) {
			continue
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), waitingNote) {
			continue
		}
		n++
	}
	return n
}

func heldElsewhere(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	ok, err := tryLockFile(f, true)
	if ok {
		unlockFile(f)
	}
	return err == nil && !ok
}

// Dirty reports whether the record was written from a tree with uncommitted changes, or by a run
// told --allow-dirty (Env "git_dirty" or "allow_dirty" true) — or a measurement merged into it
// was ([Record.Measured]): a record is clean only when all of its numbers are.
func (r *Record) Dirty() bool {
	if envDirty(r.Env) {
		return true
	}
	for i := range r.Measured {
		if r.Measured[i].Dirty() {
			return true
		}
	}
	return false
}

// envDirty reports whether an environment says its tree had uncommitted changes ("git_dirty") or
// was told --allow-dirty ("allow_dirty").
func envDirty(env map[string]any) bool {
	for _, k := range []string{"git_dirty", "allow_dirty"} {
		if b, ok := env[k].(bool); ok && b {
			return true
		}
	}
	return false
}
