// Command dmlkit is the command-line face of the dmlkit library: evaluation, losses, training,
// data, experiments, figures and tables. It is deliberately thin: every subcommand parses flags
// and calls the library. One file per subcommand registers itself with [register].
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"sort"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

// register adds a subcommand; called from init functions of the per-subcommand files.
func register(name, summary string, run func(args []string, stdout, stderr io.Writer) error) {
	if _, dup := commands[name]; dup {
		panic("dmlkit: duplicate subcommand " + name)
	}
	commands[name] = command{name: name, summary: summary, run: run}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "dmlkit — deep metric learning reproducibility workbench")
	fmt.Fprintln(w, "\nUsage: dmlkit <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'dmlkit <command> -h' for a command's flags.")
}

// run dispatches args (without the program name) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dmlkit: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	out := &trackedWriter{w: stdout}
	err := c.run(args[1:], out, stderr)
	if err == nil && out.err != nil {
		err = fmt.Errorf("writing the output: %w", out.err)
	}
	if err != nil {
		if err == errUsage {
			if helpRequested(args[1:]) {
				return 0 // -h / --help: the usage was asked for, as with Go's flag.ExitOnError
			}
			return 2
		}
		fmt.Fprintf(stderr, "dmlkit %s: %s\n", c.name, strings.TrimPrefix(err.Error(), c.name+": "))
		return 1
	}
	return 0
}

// helpRequested reports whether args ask for help (-h, -help, --h or --help before "--"); a
// command's flag set then returns flag.ErrHelp after printing its usage, which is not an error.
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// trackedWriter remembers the first error of a write to standard output, which commands print to
// with fmt.Fprintf and do not check: output to a full disk, /dev/full or a closed pipe then exits 1.
type trackedWriter struct {
	w   io.Writer
	err error
}

func (t *trackedWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil && t.err == nil {
		t.err = err
	}
	return n, err
}

// errUsage signals that a flag set already printed its usage/error message.
var errUsage = fmt.Errorf("usage")

func main() {
	// Messages name commands as `dmlkit …` (e.g. "run `dmlkit data fetch omniglot`"); a user who
	// started this one with go run, or by a path such as bin/dmlkit, gets them in that form.
	var stderr io.Writer = os.Stderr
	if exe, err := os.Executable(); err == nil && isGoRun(exe) {
		stderr = &commandHints{w: os.Stderr, as: goRunCommand}
	} else if strings.ContainsRune(os.Args[0], '/') {
		stderr = &commandHints{w: os.Stderr, as: os.Args[0]}
	}
	stop, err := startCPUProfile(os.Getenv("DMLKIT_CPUPROFILE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "dmlkit:", err)
		os.Exit(1)
	}
	rc := run(os.Args[1:], os.Stdout, stderr)
	stop()
	os.Exit(rc)
}

// startCPUProfile writes a CPU profile of the whole command to path (DMLKIT_CPUPROFILE; read it with
// `go tool pprof bin/dmlkit PATH`), to see where a run's seconds go. An empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("DMLKIT_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("DMLKIT_CPUPROFILE %s: %w", path, err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// goRunCommand is how the README runs the tool from a checkout without building it.
const goRunCommand = "GOTOOLCHAIN=auto GOEXPERIMENT=simd go run ./cmd/dmlkit"

// isGoRun reports whether exe is a binary `go run` built: GOTMPDIR/go-build…/b001/exe/NAME, or
// (Go ≥ 1.24 caches them) GOCACHE/xx/<64 hex digits>-d/NAME.
func isGoRun(exe string) bool {
	dir := filepath.Base(filepath.Dir(exe))
	return dir == "exe" && strings.Contains(filepath.ToSlash(exe), "/go-build") || goRunCacheDir.MatchString(dir)
}

var goRunCacheDir = regexp.MustCompile(`^[0-9a-f]{64}-d$`)

// commandHints rewrites the commands quoted in messages, "`dmlkit ", as "`"+as+" ".
type commandHints struct {
	w  io.Writer
	as string
}

func (g *commandHints) Write(p []byte) (int, error) {
	if _, err := g.w.Write(bytes.ReplaceAll(p, []byte("`dmlkit "), []byte("`"+g.as+" "))); err != nil {
		return 0, err
	}
	return len(p), nil
}
