// Package atomicfile writes output files so that readers never see a partial file, without
// turning a device or a pipe the user named into a regular file.
//
// Writing PATH.tmp and renaming it over PATH is right for a regular file, but run as root with
// PATH = /dev/full (or /dev/stdout, a FIFO, a socket) it replaces the device node with a regular
// file. [WriteFile] therefore replaces atomically only a regular file or a path that does not
// exist yet, and writes anything else directly, returning the error of the write (ENOSPC from
// /dev/full, EPIPE from a closed pipe).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path.
//
//   - path does not exist: data goes to a temporary file in path's directory, which is renamed
//     to path (mode perm, not masked by the umask).
//   - path is a regular file (or a symbolic link to one): the same, renamed over the file the
//     link resolves to; the link stays and the file keeps its mode.
//   - anything else (character or block device, named pipe, socket): path is opened for writing
//     and written directly; nothing is created, renamed or removed. A directory is an error.
//
// The returned error wraps the failing system call's error (test with errors.Is, e.g.
// syscall.ENOSPC).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	st, err := os.Stat(path) // follows links: what a write would reach
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("writing %s: is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		return writeDirect(path, data)
	case err == nil:
		perm = st.Mode().Perm()
		if real, lerr := filepath.EvalSymlinks(path); lerr == nil {
			path = real
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(perm); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeDirect writes data to an existing non-regular file (device, pipe, socket).
func writeDirect(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// File is an output file written in a stream (a download, a large export) for the same atomic
// replace as [WriteFile]: readers of the path see either the old file or the whole new one. Write
// to it, then [File.Commit] to put it in place or [File.Abort] to discard it.
type File struct {
	*os.File
	path, tmp string // tmp is "" when writing directly (device, pipe, socket)
	perm      os.FileMode
	done      bool
}

// Create starts writing path with the rules of [WriteFile]: a new or regular file (or a link to
// one) is written to a uniquely named temporary file beside it, which Commit renames into place
// (mode perm for a new file; an existing file keeps its mode); anything else is opened and
// written directly. A directory is an error.
func Create(path string, perm os.FileMode) (*File, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("writing %s: is a directory", path)
	case err == nil && !st.Mode().IsRegular():
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{File: f, path: path}, nil
	case err == nil:
		perm = st.Mode().Perm()
		if real, lerr := filepath.EvalSymlinks(path); lerr == nil {
			path = real
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &File{File: f, path: path, tmp: f.Name(), perm: perm}, nil
}

// Commit closes the file and, unless it was written directly, renames it over its path. After a
// failure nothing is left behind but the old file, if there was one.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("writing %s: already committed or aborted", f.path)
	}
	f.done = true
	if f.tmp == "" {
		if err := f.File.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
		return nil
	}
	fail := func(err error) error {
		f.File.Close()
		os.Remove(f.tmp)
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if err := f.File.Chmod(f.perm); err != nil {
		return fail(err)
	}
	if err := f.File.Close(); err != nil {
		os.Remove(f.tmp)
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if err := os.Rename(f.tmp, f.path); err != nil {
		os.Remove(f.tmp)
		return err
	}
	return nil
}

// Abort closes the file and removes the temporary file; the path keeps its old content. It is a
// no-op after Commit or Abort.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.File.Close()
	if f.tmp != "" {
		os.Remove(f.tmp)
	}
}
