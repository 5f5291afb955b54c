package plots

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	pdf "codeberg.org/go-pdf/fpdf"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Formats are the file formats [Save] writes by default.
var Formats = []string{"png", "svg", "pdf"}

// PDFDate is the creation and modification date written into every PDF, so that regenerating a
// figure gives the same bytes: $SOURCE_DATE_EPOCH (seconds since 1970, the reproducible-builds
// convention) when set, else 2000-01-01 00:00:00 UTC. PDFs also list their fonts in sorted order
// (gofpdf's catalog sort). PNG and SVG output carry no date and no random ids.
var PDFDate = pdfDate()

func pdfDate() time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if sec, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(sec, 0).UTC()
		}
	}
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
}

func init() {
	pdf.SetDefaultCatalogSort(true)
	pdf.SetDefaultCreationDate(PDFDate)
	pdf.SetDefaultModificationDate(PDFDate)
}

// Figure is what [Save] writes: a *plot.Plot, or a composite such as [Panels].
type Figure interface {
	Draw(c draw.Canvas)
}

// Sizer is a [Figure] with its own size (e.g. several panels side by side); [Save] uses it instead
// of the style's Width × Height.
type Sizer interface {
	Size() (w, h vg.Length)
}

// Save writes p as stem.png, stem.svg and stem.pdf (or the given formats), creating the directory
// of stem. The size is the style's Width × Height unless p is a [Sizer] (every [Chart] is). PNGs
// are rendered at the style's DPI, so a 3.3in × 2.3in figure at 300 dpi is 990 × 690 pixels.
// The output is byte-identical when the figure is saved again (see [PDFDate]). It returns the
// files written.
func Save(p Figure, s Style, stem string, formats ...string) ([]string, error) {
	return SaveTo(atomicfile.Disk, p, s, stem, formats...)
}

// SaveTo is [Save] through w: with an [*atomicfile.Batch] the files are rendered now and written
// when the batch commits.
func SaveTo(w atomicfile.Writer, p Figure, s Style, stem string, formats ...string) ([]string, error) {
	if len(formats) == 0 {
		formats = Formats
	}
	w = atomicfile.Or(w)
	var out []string
	for _, f := range formats {
		path := stem + "." + f
		if err := saveOne(w, p, s, path, f); err != nil {
			return out, fmt.Errorf("plots: writing %s: %w", path, err)
		}
		out = append(out, path)
	}
	return out, nil
}

func saveOne(out atomicfile.Writer, p Figure, s Style, path, format string) (err error) {
	defer func() {
		// gonum/plot panics on some degenerate inputs (e.g. an empty heat map range); report it.
		if r := recover(); r != nil {
			err = fmt.Errorf("rendering failed: %v", r)
		}
	}()
	var buf bytes.Buffer
	w, h := s.Width, s.Height
	if sz, ok := p.(Sizer); ok {
		w, h = sz.Size()
	}
	switch format {
	case "png":
		dpi := s.DPI
		if dpi <= 0 {
			dpi = 300
		}
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(whiteBG))
		p.Draw(draw.New(c))
		if _, err = (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
			return err
		}
	case "svg", "pdf", "eps", "jpg", "tif":
		c, err2 := draw.NewFormattedCanvas(w, h, format)
		if err2 != nil {
			return err2
		}
		p.Draw(draw.New(c))
		if _, err = c.WriteTo(&buf); err != nil {
			return err
		}
	default:
		return errors.New("unknown format " + format)
	}
	// A regular file (or a link to one) is replaced atomically; a device or pipe is written through.
	return out.WriteFile(path, buf.Bytes(), 0o644)
}
