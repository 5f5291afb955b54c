package data

import (
	"errors"
	"fmt"
)

// FileError is the error every loader returns for bad input: it names the dataset, the file and,
// where the problem sits on one line of a text file, the 1-based line number.
type FileError struct {
	Dataset string // e.g. "cub", "omniglot"
	File    string // path of the file at fault
	Line    int    // 1-based line number; 0 when not line-specific
	Err     error
}

func (e *FileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("data: %s: %s:%d: %v", e.Dataset, e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("data: %s: %s: %v", e.Dataset, e.File, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ErrMissing, ErrTruncated, ErrUnknownClass and ErrFormat classify loader errors; test with errors.Is.
var (
	ErrMissing      = errors.New("missing file")
	ErrTruncated    = errors.New("truncated file")
	ErrUnknownClass = errors.New("unknown class")
	ErrFormat       = errors.New("bad format")
)

// ferr builds a *FileError whose error wraps kind (may be nil) and the formatted text, which
// may itself wrap an error with %w.
func ferr(dataset, file string, line int, kind error, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if kind != nil {
		err = fmt.Errorf("%w: %w", kind, err)
	}
	return &FileError{Dataset: dataset, File: file, Line: line, Err: err}
}
