package judge

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

func TexEscape(s string) string {
	return strings.NewReplacer(
		`\`, `\textbackslash{}`, "&", `\&`, "%", `\%`, "$", `\$`, "#", `\#`, "_", `\_`,
		"{", `\{`, "}", `\}`, "~", `\textasciitilde{}`, "^", `\textasciicircum{}`,
		"±", `$\pm$`, "−", `$-$`, "…", `\dots{}`, "→", `$\rightarrow$`, "≥", `$\geq$`, "≤", `$\leq$`,
		"×", `$\times$`, "δ", `$\delta$`, "γ", `$\gamma$`, "⌈", `$\lceil$`, "⌉", `$\rceil$`, "∞", `$\infty$`,
	).Replace(s)
}
