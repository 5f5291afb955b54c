package sweep

import (
	"math"

	"strconv"
	"strings"
)

func FmtNum(v float64, digits int) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

func MdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// mdText is [mdEscape] with * and _ escaped too, for the texts of results tables: a product in a
// formula ("0.9 * a + 0.1 * b") or an underscore would otherwise turn what lies between italic.
func MdText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}

func TexEscape(s string) string {
	return strings.NewReplacer(
		`\`, `\textbackslash{}`, "&", `\&`, "%", `\%`, "$", `\$`, "#", `\#`, "_", `\_`,
		"{", `\{`, "}", `\}`, "~", `\textasciitilde{}`, "^", `\textasciicircum{}`,
		"±", `$\pm$`, "−", `$-$`, "…", `\dots{}`, "→", `$\rightarrow$`, "≥", `$\geq$`, "≤", `$\leq$`,
		"×", `$\times$`, "δ", `$\delta$`, "γ", `$\gamma$`, "⌈", `$\lceil$`, "⌉", `$\rceil$`, "∞", `$\infty$`,
	).Replace(s)
}
