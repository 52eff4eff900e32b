package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
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

// MaxBody bounds a request body, which is read whole before it is decoded. external-dns sends
// all its records at once, about 150 bytes each and a few hundred with labels and properties:
// 4 MiB holds 10,000 records of up to 400 bytes, and decoded it stays well within the pod's
// 128 MiB (decoding takes several times the body).
const MaxBody = 4 << 20

// MaxRecords bounds each list of records a request carries (the endpoints of
// /adjustendpoints, each of create, updateOld, updateNew and delete of /records): the scale the
// operator is measured at. Without it a body of tiny records ({}) would decode into far more
// memory than its size.
const MaxRecords = 10000

// Reader reads the server's entries.
type Reader interface {
	Records(ctx context.Context) ([]endpoint.Record, error)
}

// Syncer has the operator's loop run one sync that reads the server and waits for it.
type Syncer interface {
	SyncNow(ctx context.Context) error
}

// Config wires a Server.
type Config struct {
	// Reader reads the server's entries; Owner (the registry's OwnedAmong) says which of one
	// read's are the webhook's.
	Reader Reader
	Owner  func([]endpoint.Record) func(*endpoint.Record) bool
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
// gives a sync are what external-dns has published, read from the server, with the changes of the
// request being applied on top.
type Server struct {
	cfg    Config
	syncer Syncer

	// applying serialises POST /records: one set of changes at a time.
	applying sync.Mutex
	mu       sync.Mutex
	request  *Changes // the changes of the request being applied, nil between requests
	// last is what was published once the last sync's writes were done, nil when unknown
	// (at start, after a failed sync): a sync starts from it instead of reading the server
	// for it, since the sync reads the server itself.
	last published
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

// Endpoints is the controller.EndpointSource: what external-dns has published, with the changes being
// applied.
func (s *Server) Endpoints(ctx context.Context) ([]*endpoint.Endpoint, error) {
	s.mu.Lock()
	request, h := s.request, s.last.clone()
	s.mu.Unlock()
	if h == nil {
		var err error
		if h, err = s.published(ctx); err != nil {
			return nil, err
		}
	}
	if request != nil {
		if err := h.apply(request); err != nil {
			return nil, err
		}
	}
	return h.endpoints(s.cfg.Namespace), nil
}

// AddEventHandler is part of controller.EndpointSource; external-dns's requests, not events, start
// the syncs that matter.
func (s *Server) AddEventHandler(func()) {}

// Synced is told the entries the webhook owns once a sync's writes are done, by hostname.
func (s *Server) Synced(entries map[string][]endpoint.Record) {
	var recs []endpoint.Record
	for _, rs := range entries {
		recs = append(recs, rs...)
	}
	h := publishedOf(recs, func(*endpoint.Record) bool { return true }, registry.Marked)
	s.mu.Lock()
	s.last = h
	s.mu.Unlock()
}

// Forget is told that a sync failed: what is published is read from the server again.
func (s *Server) Forget() {
	s.mu.Lock()
	s.last = nil
	s.mu.Unlock()
}

// published reads what external-dns has published from the server.
func (s *Server) published(ctx context.Context) (published, error) {
	recs, err := s.cfg.Reader.Records(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading router-hosts: %w", err)
	}
	return publishedOf(recs, s.cfg.Owner(recs), registry.Marked), nil
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
	h, err := s.published(r.Context())
	if err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	reply(w, http.StatusOK, h.records())
}

// applyChanges writes external-dns's changes through the operator's pipeline: the loop's next
// sync, which reads the server and plans everything published with the changes applied.
// Invalid changes are a 400 and write nothing; a failed sync is a 503.
func (s *Server) applyChanges(w http.ResponseWriter, r *http.Request) {
	var ch Changes
	if code, err := decode(r, &ch); err != nil {
		s.fail(w, code, err)
		return
	}
	if err := (published{}).apply(&ch); err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	s.applying.Lock()
	defer s.applying.Unlock()
	s.mu.Lock()
	s.request = &ch
	s.mu.Unlock()
	err := s.syncer.SyncNow(r.Context())
	s.mu.Lock()
	s.request = nil
	s.mu.Unlock()
	if err != nil {
		s.fail(w, http.StatusServiceUnavailable, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adjustEndpoints(w http.ResponseWriter, r *http.Request) {
	var in []*WireEndpoint
	if code, err := decode(r, &in); err != nil {
		s.fail(w, code, err)
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

// decode reads the body of a POST into v, and says which status refuses it: 415 for another
// media type than external-dns sends, 413 for a body or a list of records over the limits
// (found before the body is read whole, or decoded), 400 for anything else wrong with it.
func decode(r *http.Request, v any) (int, error) {
	if err := checkMediaType(r.Header.Get("Content-Type")); err != nil {
		return http.StatusUnsupportedMediaType, err
	}
	if r.ContentLength > MaxBody {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("request body of %d bytes: the webhook takes at most %d", r.ContentLength, MaxBody)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(nil, r.Body, MaxBody))
	body := buf.Bytes()
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes, the most the webhook takes", MaxBody)
		}
		return http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	if list := overMaxRecords(body); list != "" {
		return http.StatusRequestEntityTooLarge, fmt.Errorf("more than %d records in %s: the webhook takes at most %d in one list", MaxRecords, list, MaxRecords)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	}
	if dec.More() {
		return http.StatusBadRequest, errors.New("reading the request body: more than one JSON value")
	}
	return 0, nil
}

// checkMediaType accepts what external-dns sends, MediaType, and plain JSON for people and
// scripts; anything else (a form, text, nothing) is not a request of the protocol.
func checkMediaType(contentType string) error {
	mt, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil && contentType == "":
		return fmt.Errorf("no Content-Type: want %s or application/json", MediaType)
	case err != nil:
		return fmt.Errorf("Content-Type %q: %w", contentType, err)
	case mt == "application/json":
		return nil
	case mt == mediaTypeName && params["version"] == mediaTypeVersion:
		return nil
	}
	return fmt.Errorf("Content-Type %q: want %s or application/json", contentType, MediaType)
}

// overMaxRecords names the first list in body with more than MaxRecords records, "" when
// none has: the body itself when it is an array, or an array member of the object it is.
// It counts without decoding the records, so that a body of many tiny ones is refused before
// it costs their memory. A body that is no JSON passes: the decoding says what is wrong.
func overMaxRecords(body []byte) string {
	dec := json.NewDecoder(bytes.NewReader(body))
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('['):
		if countRecords(dec) > MaxRecords {
			return "the request"
		}
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return ""
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil {
				return ""
			}
			inner := json.NewDecoder(bytes.NewReader(value))
			if t, err := inner.Token(); err == nil && t == json.Delim('[') && countRecords(inner) > MaxRecords {
				return fmt.Sprint(key)
			}
		}
	}
	return ""
}

// countRecords counts the values left in the array dec is in, up to one over MaxRecords.
func countRecords(dec *json.Decoder) int {
	n := 0
	for n <= MaxRecords && dec.More() {
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
		n++
	}
	return n
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", MediaType)
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
