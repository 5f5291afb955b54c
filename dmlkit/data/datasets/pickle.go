package datasets

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// A minimal Python pickle decoder for the data files dmlkit reads (insightface .bin pair
// files): protocols 0–5 restricted to lists, tuples, bytes/str (Python 2 str and Python 3 bytes
// both decode to []byte, unicode to string), ints, floats, bools and None, with the memo, plus
// NumPy arrays as NumPy pickles them (numpy.core.multiarray._reconstruct / numpy.ndarray /
// numpy.dtype / _codecs.encode). Nothing is executed: only those four globals are recognised
// and interpreted by this code; any other global is refused with an error.

// pickleTuple distinguishes tuples from lists after decoding; lists are *pickleList so that a
// memoised list sees later appends, as in Python.
type pickleTuple []any

type pickleList struct{ items []any }

type pickleMark struct{}

// pickleGlobal is one of the recognised globals.
type pickleGlobal struct{ module, name string }

// pickleDtype is a NumPy dtype ("u1", "b1", "<f4", …).
type pickleDtype struct{ str, order string }

// pickleArray is a NumPy ndarray rebuilt from its pickled state.
type pickleArray struct {
	shape []int
	dtype *pickleDtype
	data  []byte
}

var pickleGlobals = map[pickleGlobal]bool{
	{"numpy.core.multiarray", "_reconstruct"}:  true,
	{"numpy._core.multiarray", "_reconstruct"}: true,
	{"numpy", "ndarray"}:                       true,
	{"numpy", "dtype"}:                         true,
	{"_codecs", "encode"}:                      true,
}

// pickleReduce applies a recognised global to its arguments.
func pickleReduce(g pickleGlobal, args pickleTuple) (any, error) {
	switch g.name {
	case "encode": // _codecs.encode(str, "latin1") → bytes (how Python 3 pickles bytes at protocol 2)
		if len(args) != 2 {
			break
		}
		s, ok1 := args[0].(string)
		enc, ok2 := args[1].(string)
		if !ok1 || !ok2 || enc != "latin1" && enc != "latin-1" {
			break
		}
		out := make([]byte, 0, len(s))
		for _, r := range s {
			if r > 255 {
				return nil, fmt.Errorf("%w: _codecs.encode: rune %U not latin-1", data.ErrFormat, r)
			}
			out = append(out, byte(r))
		}
		return out, nil
	case "dtype":
		if len(args) >= 1 {
			if s, ok := args[0].(string); ok {
				return &pickleDtype{str: s}, nil
			}
		}
	case "_reconstruct":
		return &pickleArray{}, nil
	}
	return nil, fmt.Errorf("%w: unexpected call %s.%s%v", data.ErrFormat, g.module, g.name, args)
}

// pickleBuild applies a BUILD state to a dtype or an array.
func pickleBuild(obj, state any) error {
	st, ok := state.(pickleTuple)
	switch o := obj.(type) {
	case *pickleDtype:
		if ok && len(st) >= 2 {
			if e, ok := st[1].(string); ok {
				o.order = e
				return nil
			}
		}
	case *pickleArray:
		// (version, shape, dtype, is_fortran, rawdata)
		if !ok || len(st) != 5 {
			break
		}
		shape, ok1 := st[1].(pickleTuple)
		dt, ok2 := st[2].(*pickleDtype)
		fortran, ok3 := st[3].(bool)
		if !ok1 || !ok2 || !ok3 || fortran {
			break
		}
		o.dtype = dt
		for _, d := range shape {
			n, ok := d.(int64)
			if !ok || n < 0 {
				return fmt.Errorf("%w: ndarray shape %v", data.ErrFormat, shape)
			}
			o.shape = append(o.shape, int(n))
		}
		switch raw := st[4].(type) {
		case []byte:
			o.data = raw
		case string: // Python 2 pickles of arrays store rawdata as str; latin-1 decode
			for _, r := range raw {
				o.data = append(o.data, byte(r))
			}
		default:
			return fmt.Errorf("%w: ndarray data of type %T (object arrays are not supported)", data.ErrFormat, raw)
		}
		return nil
	}
	return fmt.Errorf("%w: unsupported BUILD of %T with %T", data.ErrFormat, obj, state)
}

// bytesOf returns v as raw bytes: a bytes value or a 1-D uint8/int8 ndarray.
func bytesOf(v any) ([]byte, bool) {
	switch x := v.(type) {
	case []byte:
		return x, true
	case *pickleArray:
		if x.dtype != nil && (x.dtype.str == "u1" || x.dtype.str == "i1") && len(x.shape) == 1 && x.shape[0] == len(x.data) {
			return x.data, true
		}
	}
	return nil, false
}

// boolsOf returns v as bools: a list of bools/0/1 ints, or a 1-D bool ndarray.
func boolsOf(v any) ([]bool, error) {
	switch x := v.(type) {
	case *pickleList:
		out := make([]bool, len(x.items))
		for i, it := range x.items {
			switch b := it.(type) {
			case bool:
				out[i] = b
			case int64:
				if b != 0 && b != 1 {
					return nil, fmt.Errorf("element %d = %d, want a bool", i, b)
				}
				out[i] = b == 1
			default:
				return nil, fmt.Errorf("element %d is %T, want a bool", i, it)
			}
		}
		return out, nil
	case *pickleArray:
		if x.dtype != nil && x.dtype.str == "b1" && len(x.shape) == 1 && x.shape[0] == len(x.data) {
			out := make([]bool, len(x.data))
			for i, b := range x.data {
				out[i] = b != 0
			}
			return out, nil
		}
		return nil, fmt.Errorf("ndarray of dtype %v shape %v, want 1-D bool", x.dtype, x.shape)
	}
	return nil, fmt.Errorf("%T, want a list of bools", v)
}

var errPickleObject = errors.New("pickled Python objects other than NumPy arrays are not supported")

// unpickle decodes one pickle from b.
func unpickle(b []byte) (any, error) {
	var stack []any
	memo := map[int]any{}
	pos := 0
	need := func(n int) ([]byte, error) {
		if n < 0 || pos+n > len(b) {
			return nil, fmt.Errorf("%w: pickle ends at byte %d, need %d more", data.ErrTruncated, len(b), pos+n-len(b))
		}
		s := b[pos : pos+n]
		pos += n
		return s, nil
	}
	line := func() (string, error) {
		i := strings.IndexByte(string(b[pos:]), '\n')
		if i < 0 {
			return "", fmt.Errorf("%w: pickle text argument without newline", data.ErrTruncated)
		}
		s := string(b[pos : pos+i])
		pos += i + 1
		return s, nil
	}
	pop := func() (any, error) {
		if len(stack) == 0 {
			return nil, fmt.Errorf("%w: pickle stack underflow at byte %d", data.ErrFormat, pos)
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v, nil
	}
	popMark := func() ([]any, error) {
		for i := len(stack) - 1; i >= 0; i-- {
			if _, ok := stack[i].(pickleMark); ok {
				items := append([]any(nil), stack[i+1:]...)
				stack = stack[:i]
				return items, nil
			}
		}
		return nil, fmt.Errorf("%w: pickle MARK missing at byte %d", data.ErrFormat, pos)
	}
	uint := func(n int) (int, error) {
		s, err := need(n)
		if err != nil {
			return 0, err
		}
		switch n {
		case 1:
			return int(s[0]), nil
		case 2:
			return int(binary.LittleEndian.Uint16(s)), nil
		case 4:
			return int(binary.LittleEndian.Uint32(s)), nil
		}
		v := binary.LittleEndian.Uint64(s)
		if v > math.MaxInt32 {
			return 0, fmt.Errorf("%w: pickle length %d too large", data.ErrFormat, v)
		}
		return int(v), nil
	}
	for {
		ops, err := need(1)
		if err != nil {
			return nil, err
		}
		op := ops[0]
		switch op {
		case 0x80: // PROTO
			if _, err := need(1); err != nil {
				return nil, err
			}
		case 0x95: // FRAME
			if _, err := need(8); err != nil {
				return nil, err
			}
		case '.': // STOP
			v, err := pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case '(': // MARK
			stack = append(stack, pickleMark{})
		case ']': // EMPTY_LIST
			stack = append(stack, &pickleList{})
		case ')': // EMPTY_TUPLE
			stack = append(stack, pickleTuple{})
		case 'l', 't': // LIST, TUPLE
			items, err := popMark()
			if err != nil {
				return nil, err
			}
			if op == 'l' {
				stack = append(stack, &pickleList{items})
			} else {
				stack = append(stack, pickleTuple(items))
			}
		case 0x85, 0x86, 0x87: // TUPLE1..3
			n := int(op - 0x84)
			if len(stack) < n {
				return nil, fmt.Errorf("%w: pickle stack underflow at byte %d", data.ErrFormat, pos)
			}
			t := pickleTuple(append([]any(nil), stack[len(stack)-n:]...))
			stack = append(stack[:len(stack)-n], t)
		case 'a', 'e': // APPEND, APPENDS
			var items []any
			if op == 'a' {
				v, err := pop()
				if err != nil {
					return nil, err
				}
				items = []any{v}
			} else if items, err = popMark(); err != nil {
				return nil, err
			}
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: pickle APPEND without a list at byte %d", data.ErrFormat, pos)
			}
			l, ok := stack[len(stack)-1].(*pickleList)
			if !ok {
				return nil, fmt.Errorf("%w: pickle APPEND to %T at byte %d", data.ErrFormat, stack[len(stack)-1], pos)
			}
			l.items = append(l.items, items...)
		case 'C', 'B', 0x8e, 'U', 'T': // SHORT_BINBYTES, BINBYTES, BINBYTES8, SHORT_BINSTRING, BINSTRING
			w := map[byte]int{'C': 1, 'B': 4, 0x8e: 8, 'U': 1, 'T': 4}[op]
			n, err := uint(w)
			if err != nil {
				return nil, err
			}
			s, err := need(n)
			if err != nil {
				return nil, err
			}
			stack = append(stack, append([]byte(nil), s...))
		case 0x8c, 'X', 0x8d: // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
			w := map[byte]int{0x8c: 1, 'X': 4, 0x8d: 8}[op]
			n, err := uint(w)
			if err != nil {
				return nil, err
			}
			s, err := need(n)
			if err != nil {
				return nil, err
			}
			stack = append(stack, string(s))
		case 0x88:
			stack = append(stack, true)
		case 0x89:
			stack = append(stack, false)
		case 'N':
			stack = append(stack, nil)
		case 'K', 'M':
			n, err := uint(map[byte]int{'K': 1, 'M': 2}[op])
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(n))
		case 'J':
			s, err := need(4)
			if err != nil {
				return nil, err
			}
			stack = append(stack, int64(int32(binary.LittleEndian.Uint32(s))))
		case 'I': // INT (protocol 0; "01"/"00" are True/False)
			s, err := line()
			if err != nil {
				return nil, err
			}
			switch s {
			case "01":
				stack = append(stack, true)
			case "00":
				stack = append(stack, false)
			default:
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%w: pickle INT %q", data.ErrFormat, s)
				}
				stack = append(stack, v)
			}
		case 'G': // BINFLOAT
			s, err := need(8)
			if err != nil {
				return nil, err
			}
			stack = append(stack, math.Float64frombits(binary.BigEndian.Uint64(s)))
		case 'q', 'r', 'p', 0x94: // BINPUT, LONG_BINPUT, PUT, MEMOIZE
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: pickle memo store with empty stack", data.ErrFormat)
			}
			var k int
			switch op {
			case 'q':
				k, err = uint(1)
			case 'r':
				k, err = uint(4)
			case 'p':
				var s string
				if s, err = line(); err == nil {
					k, err = strconv.Atoi(s)
				}
			default:
				k = len(memo)
			}
			if err != nil {
				return nil, err
			}
			memo[k] = stack[len(stack)-1]
		case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
			var k int
			switch op {
			case 'h':
				k, err = uint(1)
			case 'j':
				k, err = uint(4)
			default:
				var s string
				if s, err = line(); err == nil {
					k, err = strconv.Atoi(s)
				}
			}
			if err != nil {
				return nil, err
			}
			v, ok := memo[k]
			if !ok {
				return nil, fmt.Errorf("%w: pickle memo key %d undefined", data.ErrFormat, k)
			}
			stack = append(stack, v)
		case 'c', 0x93: // GLOBAL (text "module\nname\n"), STACK_GLOBAL
			var g pickleGlobal
			if op == 'c' {
				if g.module, err = line(); err == nil {
					g.name, err = line()
				}
				if err != nil {
					return nil, err
				}
			} else {
				n, err1 := pop()
				m, err2 := pop()
				ns, ok1 := n.(string)
				ms, ok2 := m.(string)
				if err1 != nil || err2 != nil || !ok1 || !ok2 {
					return nil, fmt.Errorf("%w: STACK_GLOBAL without module and name strings at byte %d", data.ErrFormat, pos)
				}
				g = pickleGlobal{ms, ns}
			}
			if !pickleGlobals[g] {
				return nil, fmt.Errorf("%w: %w: %s.%s (opcode %#x at byte %d)", data.ErrFormat, errPickleObject, g.module, g.name, op, pos-1)
			}
			stack = append(stack, g)
		case 'R': // REDUCE
			a, err1 := pop()
			f, err2 := pop()
			args, ok1 := a.(pickleTuple)
			g, ok2 := f.(pickleGlobal)
			if err1 != nil || err2 != nil || !ok1 || !ok2 {
				return nil, fmt.Errorf("%w: REDUCE of %T at byte %d", data.ErrFormat, f, pos)
			}
			v, err := pickleReduce(g, args)
			if err != nil {
				return nil, err
			}
			stack = append(stack, v)
		case 'b': // BUILD
			st, err := pop()
			if err != nil {
				return nil, err
			}
			if len(stack) == 0 {
				return nil, fmt.Errorf("%w: BUILD without an object at byte %d", data.ErrFormat, pos)
			}
			if err := pickleBuild(stack[len(stack)-1], st); err != nil {
				return nil, err
			}
		case 0x81, 0x92, 'i', 'o': // NEWOBJ, NEWOBJ_EX, INST, OBJ
			return nil, fmt.Errorf("%w: %w (opcode %#x at byte %d)", data.ErrFormat, errPickleObject, op, pos-1)
		default:
			return nil, fmt.Errorf("%w: unsupported pickle opcode %#x at byte %d", data.ErrFormat, op, pos-1)
		}
	}
}
