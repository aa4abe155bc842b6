package fake

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// manifestEntry is one image in manifest.json, in docker save's layout: the config file and
// the tags. The fake's images have no layers.
type manifestEntry struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// writeArchive writes img as docker save does: its config as <hex of the id>.json and a
// manifest.json naming it and its tags.
func writeArchive(img *image, tags []string) (*bytes.Reader, error) {
	name := strings.TrimPrefix(img.id, "sha256:") + ".json"
	manifest, err := json.Marshal([]manifestEntry{{Config: name, RepoTags: tags, Layers: []string{}}})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{name, img.config}, {"manifest.json", manifest}} {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytes.NewReader(buf.Bytes()), nil
}

// loadedImage is an image read from an archive, with the tags it is to have.
type loadedImage struct {
	img  *image
	tags []string
}

// readArchive reads what writeArchive wrote. The id is the digest of the config read, so an
// archive whose config was changed gives another image, as in Docker.
func readArchive(r io.Reader) ([]loadedImage, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("invalid image archive: %w", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("invalid image archive: %w", err)
		}
		files[hdr.Name] = b
	}
	var manifest []manifestEntry
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("invalid image archive: manifest.json: %w", err)
	}
	var out []loadedImage
	for _, m := range manifest {
		var c config
		b, ok := files[m.Config]
		if !ok {
			return nil, fmt.Errorf("invalid image archive: no config %s", m.Config)
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, fmt.Errorf("invalid image archive: config %s: %w", m.Config, err)
		}
		img := imageOf(b, c)
		var tags []string
		for _, t := range m.RepoTags {
			tags = append(tags, normalize(t))
		}
		out = append(out, loadedImage{img: img, tags: tags})
	}
	return out, nil
}
