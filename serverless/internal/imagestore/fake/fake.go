package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"minik8s.io/serverless/internal/imagestore"
)

// Store is imagestore.Store in memory.
type Store struct {
	// Run, when set, is what a RUN step does: the lines it prints and its exit code. Without
	// it every RUN step succeeds and prints nothing. Set it before the store is used.
	Run func(ctx context.Context, command string) (output []string, exitCode int)

	mu     sync.Mutex
	images map[string]*image // by id
	tags   map[string]string // reference -> id
	inUse  map[string]int    // id -> containers using it
	calls  []string
}

// image is a stored image: its config, whose digest is its id, and what was read from it.
type image struct {
	id     string
	config []byte
	labels map[string]string
}

var _ imagestore.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{images: map[string]*image{}, tags: map[string]string{}, inUse: map[string]int{}}
}

// config is an image's configuration as the fake keeps and saves it: Docker's place for the
// labels, and what the image was made of, so different content gives a different id.
type config struct {
	Config struct {
		Labels map[string]string `json:"Labels,omitempty"`
	} `json:"config"`
	Parent  string   `json:"parent,omitempty"`
	History []string `json:"history,omitempty"`
}

// newImage makes the image of a config; its id is the digest of the config's JSON, as
// Docker's is.
func newImage(c config) *image {
	b, err := json.Marshal(c)
	if err != nil {
		panic(err) // maps and strings always marshal
	}
	return imageOf(b, c)
}

// imageOf is the image whose config is b (c, decoded).
func imageOf(b []byte, c config) *image {
	sum := sha256.Sum256(b)
	return &image{id: "sha256:" + hex.EncodeToString(sum[:]), config: b, labels: c.Config.Labels}
}

// Add puts an image tagged ref in the store as if built FROM scratch with only these labels,
// and returns its id: the same ref and labels give the same id in every fake.
func (s *Store) Add(ref string, labels map[string]string) string {
	var c config
	c.Config.Labels = maps.Clone(labels)
	c.History = []string{"ADD " + normalize(ref)}
	img := newImage(c)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(img, normalize(ref))
	return img.id
}

// Use marks the image ref names as used by one more running container, until release is
// called: Remove refuses it meanwhile.
func (s *Store) Use(ref string) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.lookupLocked(ref)
	if err != nil {
		return nil, err
	}
	s.inUse[img.id]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.inUse[img.id]--; s.inUse[img.id] <= 0 {
				delete(s.inUse, img.id)
			}
		})
	}, nil
}

// Calls returns the changes and transfers made so far ("build REF", "remove ID", "save REF",
// "load REF...") and forgets them.
func (s *Store) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

func (s *Store) record(format string, args ...any) {
	s.calls = append(s.calls, fmt.Sprintf(format, args...))
}

// normalize gives a reference without a tag Docker's default one.
func normalize(ref string) string {
	if strings.HasPrefix(ref, "sha256:") || strings.Contains(ref, "@") {
		return ref
	}
	if i := strings.LastIndexByte(ref, ':'); i < 0 || strings.Contains(ref[i:], "/") {
		return ref + ":latest"
	}
	return ref
}

// lookupLocked finds the image a tag or an id names.
func (s *Store) lookupLocked(ref string) (*image, error) {
	if img, ok := s.images[ref]; ok {
		return img, nil
	}
	if id, ok := s.tags[normalize(ref)]; ok {
		return s.images[id], nil
	}
	return nil, fmt.Errorf("%w: %s", imagestore.ErrNotFound, ref)
}

// putLocked stores img (an image with its id already there stays as it is) and moves the tags
// to it.
func (s *Store) putLocked(img *image, tags ...string) {
	if _, ok := s.images[img.id]; !ok {
		s.images[img.id] = img
	}
	for _, t := range tags {
		s.tags[t] = img.id
	}
}

func (s *Store) tagsOfLocked(id string) []string {
	var out []string
	for t, i := range s.tags {
		if i == id {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Store) describeLocked(img *image) imagestore.Image {
	return imagestore.Image{ID: img.id, Tags: s.tagsOfLocked(img.id), Labels: maps.Clone(img.labels)}
}

func (s *Store) Inspect(ctx context.Context, ref string) (imagestore.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.lookupLocked(ref)
	if err != nil {
		return imagestore.Image{}, err
	}
	return s.describeLocked(img), nil
}

func (s *Store) List(ctx context.Context, labels map[string]string) ([]imagestore.Image, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []imagestore.Image
	for _, img := range s.images {
		match := true
		for k, v := range labels {
			if got, ok := img.labels[k]; !ok || got != v {
				match = false
				break
			}
		}
		if match {
			out = append(out, s.describeLocked(img))
		}
	}
	slices.SortFunc(out, func(a, b imagestore.Image) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *Store) Remove(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.lookupLocked(id)
	if err != nil {
		return err
	}
	if s.inUse[img.id] > 0 {
		return fmt.Errorf("%w: %s", imagestore.ErrInUse, img.id)
	}
	for _, t := range s.tagsOfLocked(img.id) {
		delete(s.tags, t)
	}
	delete(s.images, img.id)
	s.record("remove %s", img.id)
	return nil
}

func (s *Store) Save(ctx context.Context, ref string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	img, err := s.lookupLocked(ref)
	if err != nil {
		return nil, err
	}
	var tags []string
	if !strings.HasPrefix(ref, "sha256:") {
		tags = []string{normalize(ref)}
	}
	archive, err := writeArchive(img, tags)
	if err != nil {
		return nil, err
	}
	s.record("save %s", ref)
	return io.NopCloser(archive), nil
}

func (s *Store) Load(ctx context.Context, archive io.Reader) ([]string, error) {
	entries, err := readArchive(archive)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var loaded []string
	for _, e := range entries {
		s.putLocked(e.img, e.tags...)
		loaded = append(loaded, e.tags...)
	}
	s.record("load %s", strings.Join(loaded, " "))
	return loaded, nil
}
