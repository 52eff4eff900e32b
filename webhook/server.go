package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/router-hosts-operator/router-hosts-operator/endpoint"
	"github.com/router-hosts-operator/router-hosts-operator/registry"
)

// DefaultAnswerWithin is how long a request may take, by default, before it is answered 503.
// external-dns gives a whole request 15 s by default (its read and write timeouts added) and
// takes a timeout for a hard error that stops it, while a 503 is a soft one it retries at its
// next loop. A sync that goes on after the answer finishes its writes; the next loop reads
// what they did.
const DefaultAnswerWithin = 10 * time.Second

// maxBody bounds a request body: external-dns sends all its records at once, a few hundred
// bytes each.
const maxBody = 32 << 20

// Reader reads the server's entries.
type Reader interface {
	Records(ctx context.Context) ([]endpoint.Record, error)
}

// Syncer has the operator's loop run one sync that reads the server and waits for it.
type Syncer interface {
	Sync(ctx context.Context) error
}

// Config wires a Server.
type Config struct {
	// Reader reads the server's entries; Owns (the registry's) says which are the webhook's.
	Reader Reader
	Owns   func(*endpoint.Record) bool
	// Domains is the domain filter external-dns is told in the negotiation.
	Domains []string
	Exclude []string
	// Namespace is written in the namespace: tag of the webhook's entries.
	Namespace string
	// AnswerWithin is how long a request may take before it is answered 503; 10 s when zero.
	AnswerWithin time.Duration
	Log          logrus.FieldLogger
}

// Server answers external-dns. It is also the controller's only Source: the endpoints it
// gives a sync are what external-dns holds, read from the server, with the changes of the
// request being applied on top.
type Server struct {
	cfg    Config
	syncer Syncer

	// applying serialises POST /records: one set of changes at a time.
	applying sync.Mutex
	mu       sync.Mutex
	pending  *Changes // the changes of the request being applied, nil between requests
	// last is what the webhook held once the last sync's writes were done, nil when unknown
	// (at start, after a failed sync): a sync starts from it instead of reading the server
	// for it, since the sync reads the server itself.
	last held
	// told remembers which dropped records were logged, so each is logged once.
	told map[dropped]bool
}

// New returns a Server; SetSyncer must be called before it serves.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = logrus.StandardLogger()
	}
	if cfg.AnswerWithin <= 0 {
		cfg.AnswerWithin = DefaultAnswerWithin
	}
	return &Server{cfg: cfg, told: map[dropped]bool{}}
}

// SetSyncer sets the controller the server applies changes through; the controller reads the
// server's endpoints, so it is built after the server.
func (s *Server) SetSyncer(sy Syncer) { s.syncer = sy }

// Endpoints is the controller.Source: what external-dns holds, with the changes being applied.
func (s *Server) Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error) {
	s.mu.Lock()
	pending, h := s.pending, s.last.clone()
	s.mu.Unlock()
	if h == nil {
		var err error
		if h, err = s.held(ctx); err != nil {
			return nil, err
		}
	}
	if pending != nil {
		if err := h.apply(pending); err != nil {
			return nil, err
		}
	}
	return h.endpoints(s.cfg.Namespace), nil
}

// AddEventHandler is part of controller.Source; external-dns's requests, not events, start
// the syncs that matter.
func (s *Server) AddEventHandler(func()) {}

// Synced is told the entries the webhook owns once a sync's writes are done, by hostname.
func (s *Server) Synced(entries map[string][]endpoint.Record) {
	var recs []endpoint.Record
	for _, rs := range entries {
		recs = append(recs, rs...)
	}
	h := heldOf(recs, func(*endpoint.Record) bool { return true }, registry.Marked)
	s.mu.Lock()
	s.last = h
	s.mu.Unlock()
}

// Forget is told that a sync failed: what the webhook holds is read from the server again.
func (s *Server) Forget() {
	s.mu.Lock()
	s.last = nil
	s.mu.Unlock()
}

func (s *Server) held(ctx context.Context) (held, error) {
	recs, err := s.cfg.Reader.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading router-hosts: %w", err)
	}
	return heldOf(recs, s.cfg.Owns, registry.Marked), nil
}

// Handler serves the protocol: GET / (negotiation), GET and POST /records, POST
// /adjustendpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.negotiate)
	mux.HandleFunc("GET /records", s.records)
	mux.HandleFunc("POST /records", s.applyChanges)
	mux.HandleFunc("POST /adjustendpoints", s.adjustEndpoints)
	return http.TimeoutHandler(mux, s.cfg.AnswerWithin, "router-hosts did not answer in time; retry at the next loop\n")
}

func (s *Server) negotiate(w http.ResponseWriter, _ *http.Request) {
	reply(w, http.StatusOK, domainFilter{Include: s.cfg.Domains, Exclude: s.cfg.Exclude})
}

// records answers with what this webhook owns, less what is marked for deletion. A server
// that cannot be read is a 503, which external-dns retries at its next loop.
func (s *Server) records(w http.ResponseWriter, r *http.Request) {
	h, err := s.held(r.Context())
	if err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	reply(w, http.StatusOK, h.records())
}

// applyChanges writes external-dns's changes through the operator's pipeline: the loop's next
// sync, which reads the server and plans everything the webhook holds with the changes
// applied.
// Invalid changes are a 400 and write nothing; a failed sync is a 503.
func (s *Server) applyChanges(w http.ResponseWriter, r *http.Request) {
	var ch Changes
	if err := decode(r, &ch); err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	if err := (held{}).apply(&ch); err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	s.applying.Lock()
	defer s.applying.Unlock()
	s.mu.Lock()
	s.pending = &ch
	s.mu.Unlock()
	err := s.syncer.Sync(r.Context())
	s.mu.Lock()
	s.pending = nil
	s.mu.Unlock()
	if err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adjustEndpoints(w http.ResponseWriter, r *http.Request) {
	var in []*Endpoint
	if err := decode(r, &in); err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	out, drops := adjust(in)
	s.mu.Lock()
	for _, d := range drops {
		if !s.told[d] && len(s.told) < 10000 {
			s.told[d] = true
			s.cfg.Log.WithFields(logrus.Fields{"name": d.name, "record_type": d.recordType}).Info("record not written to router-hosts: " + d.why)
		}
	}
	s.mu.Unlock()
	reply(w, http.StatusOK, out)
}

func (s *Server) fail(w http.ResponseWriter, code int, err error) {
	s.cfg.Log.WithError(err).WithField("status", code).Warn("external-dns request failed")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, err.Error()+"\n")
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("reading the request body: %w", err)
	}
	if dec.More() {
		return errors.New("reading the request body: more than one JSON value")
	}
	return nil
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
