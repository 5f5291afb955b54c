package data

// Omniglot alphabet (coarse) labels.
//
// Provenance: the .npz files store character rows only. Row r of the background file is
// original Omniglot character r+1 and row r of the evaluation file is character r+965 (the
// converter, bitsandscraps/omniglot to_numpy.py at commit 9514cfd, puts file XXXX_YY.png at
// row XXXX − min XXXX, column YY − 1), and the
// original numbering keeps each alphabet in one contiguous range. The ranges below are those of
// the public README thefxperson/ISEF-JOCR Omniglot_data/README.md, as recorded in the project's
// data notes. Note the order is NOT the alphabetical order of the folder names.
//
// Verification (omniglot_test.go): (1) the per-alphabet counts equal the published Omniglot
// alphabet sizes keyed by the official folder names (an independent list), summing to 964 and
// 659; (2) every one of the 48 boundaries is confirmed on the pixels by drawer signatures — the
// 20 drawings of each character are by the alphabet's 20 drawers in a fixed order, so per-drawing
// size/position/ink statistics correlate within an alphabet; the first and last character at each
// boundary match their own alphabet's signature better than the neighbour's (96/96 checks, and
// all 96 one-row shifts of a boundary are detected); (3) the Braille range (background rows
// 191–216) is confirmed separately by its dot-shaped ink components. The labels are therefore
// offered, still behind the explicit [OmniglotOptions.Alphabets] switch.

// omniglotAlphabetSizes lists (name, number of characters) in original numbering order:
// 30 background alphabets, then 20 evaluation alphabets.
var omniglotAlphabetSizes = []struct {
	Name  string
	Count int
}{
	// Background (rows 0–963).
	{"Arcadian", 26}, {"Armenian", 41}, {"Asomtavruli (Georgian)", 40}, {"Balinese", 24},
	{"Bengali", 46}, {"Blackfoot (Canadian Aboriginal Syllabics)", 14}, {"Braille", 26},
	{"Cyrillic", 33}, {"Early Aramaic", 22}, {"Syriac (Estrangelo)", 23},
	{"Anglo-Saxon Futhorc", 29}, {"Futurama", 26}, {"Grantha", 43}, {"Greek", 24},
	{"Gujarati", 48}, {"Hebrew", 22}, {"Japanese (Hiragana)", 52},
	{"Inuktitut (Canadian Aboriginal Syllabics)", 16}, {"Malay (Jawi-Arabic)", 40},
	{"Japanese (Katakana)", 47}, {"Korean", 40}, {"Latin", 26}, {"Alphabet of the Magi", 20},
	{"Mkhedruli (Georgian)", 41}, {"Burmese (Myanmar)", 34}, {"N'Ko", 33},
	{"Ojibwe (Canadian Aboriginal Syllabics)", 14}, {"Sanskrit", 42}, {"Tagalog", 17},
	{"Tifinagh", 55},
	// Evaluation (rows 0–658, labels 964–1622).
	{"Angelic", 20}, {"Atemayar Qelisayer", 26}, {"Atlantean", 26}, {"Aurek-Besh", 26},
	{"Avesta", 26}, {"Ge'ez", 26}, {"Glagolitic", 45}, {"Gurmukhi", 45}, {"Kannada", 41},
	{"Keble", 26}, {"Malayalam", 47}, {"Manipuri", 40}, {"Mongolian", 30},
	{"Old Church Slavonic (Cyrillic)", 45}, {"Oriya", 46}, {"Syriac (Serto)", 23},
	{"Sylheti", 28}, {"Tengwar", 25}, {"Tibetan", 42}, {"ULOG", 26},
}

// OmniglotBackgroundAlphabets is the number of background alphabets; evaluation alphabets are
// numbered from it.
const OmniglotBackgroundAlphabets = 30

// OmniglotAlphabet returns the alphabet index (0–49) of an Omniglot label as returned by
// [Omniglot] (0–963 background, 964–1622 evaluation), or −1 if the label is out of range.
// See the provenance note in this file.
func OmniglotAlphabet(label int) int {
	if label < 0 {
		return -1
	}
	start := 0
	for a, s := range omniglotAlphabetSizes {
		if label < start+s.Count {
			return a
		}
		start += s.Count
	}
	return -1
}

// OmniglotAlphabetName returns the name of alphabet a (0–49), or "" if out of range.
func OmniglotAlphabetName(a int) string {
	if a < 0 || a >= len(omniglotAlphabetSizes) {
		return ""
	}
	return omniglotAlphabetSizes[a].Name
}
