package datasets

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // register decoders for CheckDecode
	_ "image/png"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Check says how thoroughly a loader checks the image files a list names.
type Check int

const (
	// CheckMarkers (the default) checks that each file exists and that a JPEG starts with
	// FF D8 FF and has its end-of-image marker FF D9 within its last 64 bytes, or that a PNG has
	// its signature and ends with the IEND chunk: cheap, and it catches truncated downloads.
	CheckMarkers Check = iota
	// CheckExists only checks that each file exists.
	CheckExists
	// CheckNone does not touch image files.
	CheckNone
	// CheckDecode fully decodes every image (slow).
	CheckDecode
)

// LoadOptions are shared by the benchmark loaders.
type LoadOptions struct {
	Check Check
}

// check checks one image file as set by o.Check; list and line name the list entry that
// referenced it, for the error message.
func (o LoadOptions) check(ds, list string, line int, path string) error {
	if o.Check == CheckNone {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ferr(ds, list, line, data.ErrMissing, "image %s does not exist", path)
		}
		return ferr(ds, list, line, nil, "image %s: %v", path, err)
	}
	if !st.Mode().IsRegular() {
		return ferr(ds, list, line, data.ErrFormat, "image %s is not a regular file", path)
	}
	if o.Check == CheckExists {
		return nil
	}
	if err := checkImageFile(path, st.Size(), o.Check == CheckDecode); err != nil {
		return ferr(ds, list, line, nil, "image %s: %w", path, err)
	}
	return nil
}

// checkImageFile returns ErrTruncated or ErrFormat (possibly wrapped) for a damaged image.
func checkImageFile(path string, size int64, decode bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 8)
	if n, _ := io.ReadFull(f, head); n < 8 {
		return fmt.Errorf("%w: only %d bytes", data.ErrTruncated, n)
	}
	tailLen := int64(64)
	if size < tailLen {
		tailLen = size
	}
	tail := make([]byte, tailLen)
	if _, err := f.ReadAt(tail, size-tailLen); err != nil {
		return err
	}
	if err := checkImageBytes(head, tail); err != nil {
		return err
	}
	if decode {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, _, err := image.Decode(bufio.NewReader(f)); err != nil {
			return fmt.Errorf("%w: decode: %v", data.ErrFormat, err)
		}
	}
	return nil
}

var pngIEND = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}

// checkImageBytes checks the start and the end of an encoded JPEG or PNG.
func checkImageBytes(head, tail []byte) error {
	switch {
	case len(head) >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF:
		// Entropy-coded data stuffs every FF with 00, so FF D9 near the end is the real EOI
		// (trailing padding after it is tolerated).
		if !bytes.Contains(tail, []byte{0xFF, 0xD9}) {
			return fmt.Errorf("%w: JPEG without end-of-image marker", data.ErrTruncated)
		}
	case len(head) >= 8 && string(head[:8]) == "\x89PNG\r\n\x1a\n":
		if !bytes.HasSuffix(tail, pngIEND) {
			return fmt.Errorf("%w: PNG without IEND chunk", data.ErrTruncated)
		}
	default:
		return fmt.Errorf("%w: neither JPEG nor PNG (starts % x)", data.ErrFormat, head[:min(len(head), 4)])
	}
	return nil
}

// listLine is one non-empty line of a list file with its 1-based number.
type listLine struct {
	n      int
	fields []string
}

// readList reads a whitespace-separated list file (or comma-separated when comma), skipping
// blank lines. A missing file is ErrMissing.
func readList(ds, path string, comma bool) ([]listLine, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ferr(ds, path, 0, data.ErrMissing, "list file does not exist")
		}
		return nil, ferr(ds, path, 0, nil, "%v", err)
	}
	defer f.Close()
	var out []listLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		s := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\ufeff"))
		if s == "" {
			continue
		}
		var fields []string
		if comma {
			fields = strings.Split(s, ",")
			for i := range fields {
				fields[i] = strings.TrimSpace(fields[i])
			}
		} else {
			fields = strings.Fields(s)
		}
		out = append(out, listLine{n, fields})
	}
	if err := sc.Err(); err != nil {
		return nil, ferr(ds, path, n+1, data.ErrFormat, "%v", err)
	}
	return out, nil
}

// join resolves a list entry against root; entries must stay inside root.
func joinUnder(ds, list string, line int, root, rel string) (string, error) {
	rel = filepath.FromSlash(rel)
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", ferr(ds, list, line, data.ErrFormat, "path %q is not a relative path inside the dataset", rel)
	}
	return filepath.Join(root, rel), nil
}

// requireDir returns ErrMissing naming dir when it is not a directory.
func requireDir(ds, dir string) error {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return ferr(ds, dir, 0, data.ErrMissing, "dataset directory does not exist")
	}
	return nil
}

func statDir(p string) (bool, error) {
	st, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return st.IsDir(), nil
}

// decodeBytes decodes an encoded JPEG or PNG.
func decodeBytes(b []byte) (image.Image, error) {
	im, _, err := image.Decode(bytes.NewReader(b))
	return im, err
}
