// Package klogbridge sends what client-go logs through klog (leader election, reflectors,
// client-side throttling) to the operator's logrus logger, so that every line the process
// writes has one format: with --log-format=json, every line is JSON.
package klogbridge

import (
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// Component is the component field of every entry that comes from klog, beside the
// operator's own components (config, registry, provider, ...).
const Component = "client-go"

// klog's verbosity at or above which an entry is trace rather than debug: client-go logs
// every lease renewal at 5 and every request at 6 and above.
const traceV = 5

// Install makes log the backing logger of klog: klog's own calls and the contextual loggers
// client-go takes from klog.FromContext both end in log, and klog writes nothing to stderr
// itself. klog's verbosity follows log's level as it is now: V(0) at info, up to V(4) at
// debug, every level at trace. klog hands a logger no severity for its unstructured
// Warning calls, so those arrive as info.
func Install(log *logrus.Logger) {
	// Contextual: client-go's klog.FromContext(ctx) calls reach the sink directly, whose
	// Enabled then decides by the logrus level.
	klog.SetLoggerWithOptions(logr.New(NewSink(log)), klog.ContextualLogger(true))
	// klog drops a klog.V(n) call above its own -v before the sink sees it; the flags are
	// registered on a private set, not the operator's command line.
	var fs flag.FlagSet
	klog.InitFlags(&fs)
	_ = fs.Set("v", strconv.Itoa(verbosity(log.GetLevel())))
}

// verbosity is the highest klog V level whose entries log at level l.
func verbosity(l logrus.Level) int {
	switch {
	case l >= logrus.TraceLevel:
		return 10
	case l >= logrus.DebugLevel:
		return traceV - 1
	default:
		return 0
	}
}

// level is the logrus level of a klog info entry at verbosity v.
func level(v int) logrus.Level {
	switch {
	case v <= 0:
		return logrus.InfoLevel
	case v < traceV:
		return logrus.DebugLevel
	default:
		return logrus.TraceLevel
	}
}

// NewSink returns a logr sink that writes to log: errors at error, V(0) at info (warn when
// the message starts with "Warning:", klog's convention for structured warnings), V(1) to
// V(4) at debug and higher V at trace; key/value pairs become fields.
func NewSink(log *logrus.Logger) logr.LogSink {
	return &sink{log: log}
}

type sink struct {
	log    *logrus.Logger
	name   string
	fields logrus.Fields
}

func (s *sink) Init(logr.RuntimeInfo) {}

func (s *sink) Enabled(v int) bool { return s.log.IsLevelEnabled(level(v)) }

func (s *sink) Info(v int, msg string, kv ...any) {
	lvl := level(v)
	if lvl == logrus.InfoLevel && strings.HasPrefix(msg, "Warning:") {
		lvl = logrus.WarnLevel
	}
	e := s.entry(kv)
	if v > 0 {
		e = e.WithField("v", v)
	}
	e.Log(lvl, msg)
}

func (s *sink) Error(err error, msg string, kv ...any) {
	e := s.entry(kv)
	if err != nil {
		e = e.WithError(err)
	}
	e.Error(msg)
}

func (s *sink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.fields = s.with(kv)
	return &c
}

func (s *sink) WithName(name string) logr.LogSink {
	c := *s
	if c.name != "" {
		name = c.name + "/" + name
	}
	c.name = name
	return &c
}

// entry is a logrus entry with the sink's fields and kv.
func (s *sink) entry(kv []any) *logrus.Entry {
	f := s.with(kv)
	f["component"] = Component
	if s.name != "" {
		f["logger"] = s.name
	}
	return s.log.WithFields(f)
}

// with is the sink's fields and kv's pairs, the later winning.
func (s *sink) with(kv []any) logrus.Fields {
	f := make(logrus.Fields, len(s.fields)+len(kv)/2+2)
	for k, v := range s.fields {
		f[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		key, ok := kv[i].(string)
		if !ok {
			key = fmt.Sprint(kv[i])
		}
		var v any = "<no value>"
		if i+1 < len(kv) {
			v = value(kv[i+1])
		}
		// client-go names an error "err"; the operator's entries call it "error".
		if _, isErr := v.(error); isErr && key == "err" {
			key = logrus.ErrorKey
		}
		f[key] = v
	}
	return f
}

// value is v as a field: what it says it logs as (klog.KObj's namespace/name), and text when
// it would not encode as JSON, so that the JSON formatter never drops an entry.
func value(v any) any {
	switch t := v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return v
	case error:
		return t
	case logr.Marshaler:
		return value(t.MarshalLog())
	case fmt.Stringer:
		return t.String()
	}
	if _, err := json.Marshal(v); err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return v
}
