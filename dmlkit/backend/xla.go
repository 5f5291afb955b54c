//go:build xla

package backend

// Built with -tags xla: registers GoMLX's XLA/PJRT backend ("xla:cuda", "xla:/abs/plugin.so").
// Plugins are loaded with dlopen at run time; the auto-installer is deliberately not imported.
import _ "github.com/gomlx/go-xla/compute/xla"
