package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Writer receives the output files of a report (tables, figures, README blocks). [Disk] writes each
// file in place at once; a [*Batch] holds them until [Batch.Commit], so that a report that fails
// half-way writes nothing. ReadFile returns what the Writer would leave at path: a file written
// earlier through it, else the file on disk, so that a second edit of one README builds on the first.
type Writer interface {
	WriteFile(path string, data []byte, perm os.FileMode) error
	ReadFile(path string) ([]byte, error)
}

// Disk is the [Writer] that writes each file at once with [WriteFile], creating its directory.
var Disk Writer = disk{}

type disk struct{}

func (disk) WriteFile(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return WriteFile(path, data, perm)
}

func (disk) ReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

// Or returns w, or [Disk] when w is nil.
func Or(w Writer) Writer {
	if w == nil {
		return Disk
	}
	return w
}

// Batch is a [Writer] that keeps every file in memory until [Batch.Commit] writes them all; a
// report that fails before Commit leaves every file as it was. A file written twice keeps its last
// content. A Batch is not safe for concurrent use.
type Batch struct {
	files map[string]*staged // by absolute path
	order []*staged          // in the order first written
}

type staged struct {
	path string // as the caller named it
	data []byte
	perm os.FileMode
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{files: map[string]*staged{}} }

func key(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// WriteFile stages data for path; nothing is written before [Batch.Commit].
func (b *Batch) WriteFile(path string, data []byte, perm os.FileMode) error {
	k := key(path)
	if f, ok := b.files[k]; ok {
		f.data, f.perm = bytes.Clone(data), perm
		return nil
	}
	f := &staged{path: path, data: bytes.Clone(data), perm: perm}
	b.files[k] = f
	b.order = append(b.order, f)
	return nil
}

// ReadFile returns the content staged for path, or else the file's content on disk.
func (b *Batch) ReadFile(path string) ([]byte, error) {
	if f, ok := b.files[key(path)]; ok {
		return bytes.Clone(f.data), nil
	}
	return os.ReadFile(path)
}

// Files returns the paths staged, in the order first written.
func (b *Batch) Files() []string {
	out := make([]string, len(b.order))
	for i, f := range b.order {
		out[i] = f.path
	}
	return out
}

// Changed returns the paths staged whose content differs from the file on disk (or that do not
// exist yet, or are not regular files: a device or pipe is never read), in the order first
// written: what [Batch.Commit] would write.
func (b *Batch) Changed() []string {
	var out []string
	for _, f := range b.order {
		if st, err := os.Stat(f.path); err == nil && st.Mode().IsRegular() {
			if old, err := os.ReadFile(f.path); err == nil && bytes.Equal(old, f.data) {
				continue
			}
		}
		out = append(out, f.path)
	}
	return out
}

// Commit writes the files whose content changed ([Batch.Changed]) and returns them; files already
// holding their content are not touched. It works in two passes: first every file is written in
// full to a temporary file beside its path (creating missing directories), then each is renamed
// over its path (the rules of [WriteFile]: a device or pipe is written directly, in the first
// pass). An error in the first pass — a full disk, a directory that cannot be created — removes
// the temporary files and the directories it created and leaves every path as it was. The batch
// is empty afterwards, whatever the outcome.
func (b *Batch) Commit() ([]string, error) {
	defer func() { b.files, b.order = map[string]*staged{}, nil }()
	changed := b.Changed()
	var (
		open    []*File
		made    []string // directories created, parents first
		written []string
	)
	undo := func() {
		for _, f := range open {
			f.Abort()
		}
		for i := len(made) - 1; i >= 0; i-- {
			os.Remove(made[i]) // only if still empty
		}
	}
	for _, f := range b.order {
		if !contains(changed, f.path) {
			continue
		}
		dirs, err := mkdirAll(filepath.Dir(f.path))
		made = append(made, dirs...)
		if err != nil {
			undo()
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
		tf, err := Create(f.path, f.perm)
		if err != nil {
			undo()
			return nil, err
		}
		open = append(open, tf)
		if _, err := tf.Write(f.data); err != nil {
			undo()
			return nil, fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	for i, tf := range open {
		if err := tf.Commit(); err != nil {
			for _, rest := range open[i+1:] {
				rest.Abort()
			}
			return written, err
		}
		written = append(written, tf.path)
	}
	return changed, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mkdirAll is os.MkdirAll returning the directories it created, parents first.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		}
		made = append(made, missing[i])
	}
	return made, nil
}
