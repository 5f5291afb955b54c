package datasets

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Market-1501 special person ids.
const (
	MarketJunk       = -1 // "-1_…" images: junk, ignored at evaluation
	MarketDistractor = 0  // "0000_…" images: distractors (gallery only)
)

// Market1501 loads Market-1501 from root: the folders bounding_box_train (12,936 images, 751
// ids), query (3,368) and bounding_box_test (19,732), with file names
// "<pid>_c<cam>s<seq>_<frame>_<box>.jpg", e.g. 0002_c1s1_000451_03.jpg (pid 2, camera 1). Labels
// are person ids and Cams cameras. Train drops junk (−1) and distractor (0000) images; Gallery
// keeps them with labels −1 and 0 for the evaluator (same id and same camera as the query are
// dropped there, as in layumi's evaluate_gpu.py). A query with pid ≤ 0 is an error. Files not
// ending in .jpg are ignored; a .jpg with a malformed name is an error naming the file.
func Market1501(root string, opt LoadOptions) (*data.FileSplit, error) {
	const ds = "market1501"
	if err := requireDir(ds, root); err != nil {
		return nil, err
	}
	out := &data.FileSplit{}
	for _, part := range []struct {
		dir  string
		dst  **data.Files
		keep func(pid int) bool
	}{
		{"bounding_box_train", &out.Train, func(pid int) bool { return pid > 0 }},
		{"query", &out.Query, nil},
		{"bounding_box_test", &out.Gallery, func(int) bool { return true }},
	} {
		dir := filepath.Join(root, part.dir)
		ents, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, ferr(ds, dir, 0, data.ErrMissing, "folder does not exist")
			}
			return nil, ferr(ds, dir, 0, nil, "%v", err)
		}
		f := &data.Files{Name: "market1501/" + part.dir}
		var names []string
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".jpg") {
				names = append(names, e.Name())
			}
		}
		sort.Strings(names)
		for _, n := range names {
			p := filepath.Join(dir, n)
			pid, cam, err := parseMarketName(n)
			if err != nil {
				return nil, ferr(ds, p, 0, data.ErrFormat, "%v", err)
			}
			if part.keep == nil && pid <= 0 {
				return nil, ferr(ds, p, 0, data.ErrUnknownClass, "query with person id %d (junk/distractor)", pid)
			}
			if part.keep != nil && !part.keep(pid) {
				continue
			}
			if err := opt.check(ds, dir, 0, p); err != nil {
				return nil, err
			}
			f.Paths = append(f.Paths, p)
			f.Labels = append(f.Labels, int32(pid))
			f.Cams = append(f.Cams, int32(cam))
		}
		if len(f.Paths) == 0 {
			return nil, ferr(ds, dir, 0, data.ErrMissing, "no images")
		}
		*part.dst = f
	}
	return out, nil
}

// parseMarketName returns the person id and camera of a Market-1501 file name, as layumi's
// get_id: the id is the text before the first "_" ("-1" for junk), the camera the digit(s)
// after "c" in the second field.
func parseMarketName(name string) (pid, cam int, err error) {
	base := strings.TrimSuffix(name, ".jpg")
	f := strings.Split(base, "_")
	if len(f) < 2 {
		return 0, 0, errors.New("file name is not <pid>_c<cam>s<seq>_…")
	}
	pid, err = strconv.Atoi(f[0])
	if err != nil || pid < -1 {
		return 0, 0, errors.New("file name does not start with a person id")
	}
	c, ok := strings.CutPrefix(f[1], "c")
	if !ok {
		return 0, 0, errors.New("second field does not start with c<camera>")
	}
	end := strings.IndexByte(c, 's')
	if end < 0 {
		end = len(c)
	}
	cam, err = strconv.Atoi(c[:end])
	if err != nil || cam < 1 {
		return 0, 0, errors.New("bad camera number")
	}
	return pid, cam, nil
}
