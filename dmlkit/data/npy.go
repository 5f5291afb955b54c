package data

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// npyHeader is the parsed header of a .npy member (format versions 1.0–3.0).
type npyHeader struct {
	Descr   string
	Fortran bool
	Shape   []int
}

// readNPYHeader reads the magic, version and header dictionary of a .npy stream, leaving r at
// the first data byte. It does not interpret the data (see the Omniglot byte trap in omniglot.go).
func readNPYHeader(r io.Reader) (npyHeader, error) {
	var h npyHeader
	pre := make([]byte, 8)
	if _, err := io.ReadFull(r, pre); err != nil {
		return h, fmt.Errorf("npy preamble: %w", err)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return h, fmt.Errorf("not a .npy stream (magic %q)", pre[:6])
	}
	var hlen int
	switch pre[6] {
	case 1:
		b := make([]byte, 2)
		if _, err := io.ReadFull(r, b); err != nil {
			return h, fmt.Errorf("npy header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint16(b))
	case 2, 3:
		b := make([]byte, 4)
		if _, err := io.ReadFull(r, b); err != nil {
			return h, fmt.Errorf("npy header length: %w", err)
		}
		hlen = int(binary.LittleEndian.Uint32(b))
	default:
		return h, fmt.Errorf("unsupported .npy version %d.%d", pre[6], pre[7])
	}
	if hlen > 1<<20 {
		return h, fmt.Errorf("npy header length %d is implausible", hlen)
	}
	hb := make([]byte, hlen)
	if _, err := io.ReadFull(r, hb); err != nil {
		return h, fmt.Errorf("npy header: %w", err)
	}
	s := string(hb)
	descr, err := npyField(s, "descr")
	if err != nil {
		return h, err
	}
	h.Descr = strings.Trim(descr, "'\"")
	fo, err := npyField(s, "fortran_order")
	if err != nil {
		return h, err
	}
	h.Fortran = strings.HasPrefix(fo, "True")
	shape, err := npyField(s, "shape")
	if err != nil {
		return h, err
	}
	shape = strings.Trim(shape, "() ")
	for _, f := range strings.Split(shape, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return h, fmt.Errorf("npy shape %q: bad dimension %q", shape, f)
		}
		h.Shape = append(h.Shape, n)
	}
	return h, nil
}

// npyField extracts the raw value text of key from a .npy header dictionary.
func npyField(s, key string) (string, error) {
	i := strings.Index(s, "'"+key+"'")
	if i < 0 {
		return "", fmt.Errorf("npy header %q has no %q", strings.TrimSpace(s), key)
	}
	rest := strings.TrimSpace(s[i+len(key)+2:])
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
	if strings.HasPrefix(rest, "(") {
		j := strings.Index(rest, ")")
		if j < 0 {
			return "", fmt.Errorf("npy header: unterminated %q", key)
		}
		return rest[:j+1], nil
	}
	j := strings.IndexAny(rest, ",}")
	if j < 0 {
		return "", fmt.Errorf("npy header: unterminated %q", key)
	}
	return strings.TrimSpace(rest[:j]), nil
}
