package klogbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// jsonLogger is a logrus logger at lvl writing JSON to a buffer, as --log-format=json does.
func jsonLogger(lvl logrus.Level) (*logrus.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	log := logrus.New()
	log.SetOutput(&buf)
	log.SetLevel(lvl)
	log.SetFormatter(&logrus.JSONFormatter{})
	return log, &buf
}

// entries parses every line of buf as one JSON object; a line that is not JSON fails.
func entries(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	s := bufio.NewScanner(buf)
	for s.Scan() {
		var e map[string]any
		if err := json.Unmarshal(s.Bytes(), &e); err != nil {
			t.Fatalf("a line is not JSON: %q: %v", s.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

type notJSON struct{ F float64 }

func TestSink(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level logrus.Level
		log   func(logr.Logger)
		// want is the one entry's fields (a subset), nil for no entry at all.
		want map[string]any
	}{
		{"V(0) is info", logrus.InfoLevel, func(l logr.Logger) { l.Info("Attempting to acquire leader lease...", "lock", "ns/name") },
			map[string]any{"level": "info", "msg": "Attempting to acquire leader lease...", "lock": "ns/name", "component": Component}},
		{"a Warning: message is warn", logrus.InfoLevel, func(l logr.Logger) {
			l.Info("Warning: watch ended with error", "reflector", "r", "err", errors.New("gone"))
		}, map[string]any{"level": "warning", "reflector": "r", "error": "gone"}},
		{"V(1) to V(4) are debug", logrus.DebugLevel, func(l logr.Logger) { l.V(4).Info("Failed to acquire lease") },
			map[string]any{"level": "debug", "v": 4.0}},
		{"V(4) is dropped at info", logrus.InfoLevel, func(l logr.Logger) { l.V(1).Info("caches populated") }, nil},
		{"V(5) and up are trace", logrus.TraceLevel, func(l logr.Logger) { l.V(6).Info("GET https://apiserver") },
			map[string]any{"level": "trace", "v": 6.0}},
		{"V(5) is dropped at debug", logrus.DebugLevel, func(l logr.Logger) { l.V(5).Info("Successfully renewed lease") }, nil},
		{"errors are error, at any verbosity", logrus.ErrorLevel, func(l logr.Logger) { l.V(3).Error(errors.New("boom"), "Failed to release lease") },
			map[string]any{"level": "error", "error": "boom", "msg": "Failed to release lease"}},
		{"an error without an error value", logrus.InfoLevel, func(l logr.Logger) { l.Error(nil, "unstructured error") },
			map[string]any{"level": "error", "msg": "unstructured error"}},
		{"names and values carry over", logrus.InfoLevel, func(l logr.Logger) {
			l.WithName("leader-election").WithName("lease").WithValues("lock", "a", "n", 1).Info("m", "lock", "b")
		}, map[string]any{"logger": "leader-election/lease", "lock": "b", "n": 1.0}},
		{"odd and odd-typed keys", logrus.InfoLevel, func(l logr.Logger) { l.Info("m", 7, "seven", "dangling") },
			map[string]any{"7": "seven", "dangling": "<no value>"}},
		{"values that say how they log", logrus.InfoLevel, func(l logr.Logger) {
			l.Info("m", "pod", klog.KRef("ns", "p"), "after", 1500*time.Millisecond)
		}, map[string]any{"pod": map[string]any{"name": "p", "namespace": "ns"}, "after": "1.5s"}},
		{"a value JSON cannot hold is text", logrus.InfoLevel, func(l logr.Logger) {
			l.Info("m", "nan", notJSON{F: math.NaN()}, "ch", make(chan int))
		}, map[string]any{"nan": "{F:NaN}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, buf := jsonLogger(tc.level)
			tc.log(logr.New(NewSink(log)))
			got := entries(t, buf)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("want no entry, got %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want one entry, got %v", got)
			}
			for k, want := range tc.want {
				g, _ := json.Marshal(got[0][k])
				w, _ := json.Marshal(want)
				if !bytes.Equal(g, w) {
					t.Errorf("%s = %s, want %s (entry %v)", k, g, w, got[0])
				}
			}
		})
	}
}

// captureStderr runs f with os.Stderr a pipe and returns what was written to it.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() { b, _ := io.ReadAll(r); done <- b }()
	func() {
		defer func() { os.Stderr = saved }()
		f()
	}()
	_ = w.Close()
	return string(<-done)
}

// TestInstall logs through klog's every path client-go uses: the legacy calls (Infof,
// Warningf, Errorf, V(n)), the structured ones (InfoS, ErrorS) and the contextual logger of
// klog.FromContext. Each ends in logrus as one JSON entry and klog writes nothing to stderr.
func TestInstall(t *testing.T) {
	for _, tc := range []struct {
		level logrus.Level
		// want are the entries' messages and levels, in order.
		want []string
	}{
		{logrus.InfoLevel, []string{"info legacy info", "info legacy warning", "error legacy error", "info structured",
			"error structured error", "info contextual", "warning Warning: contextual"}},
		{logrus.DebugLevel, []string{"info legacy info", "info legacy warning", "error legacy error", "debug legacy V(2)", "info structured",
			"error structured error", "info contextual", "warning Warning: contextual", "debug contextual V(4)"}},
		{logrus.TraceLevel, []string{"info legacy info", "info legacy warning", "error legacy error", "debug legacy V(2)", "trace legacy V(6)",
			"info structured", "error structured error", "info contextual", "warning Warning: contextual", "debug contextual V(4)", "trace contextual V(8)"}},
	} {
		t.Run(tc.level.String(), func(t *testing.T) {
			log, buf := jsonLogger(tc.level)
			t.Cleanup(klog.ClearLogger)
			stderr := captureStderr(t, func() {
				Install(log)
				klog.Infof("legacy %s", "info")
				klog.Warningf("legacy %s", "warning")
				klog.Errorf("legacy %s", "error")
				klog.V(2).Infof("legacy V(%d)", 2)
				klog.V(6).Info("legacy V(6)")
				klog.InfoS("structured", "k", "v")
				klog.ErrorS(errors.New("e"), "structured error")
				l := klog.FromContext(context.Background())
				l.Info("contextual", "lock", "ns/name")
				l.Info("Warning: contextual")
				l.V(4).Info("contextual V(4)")
				l.V(8).Info("contextual V(8)")
				klog.Flush()
			})
			if stderr != "" {
				t.Errorf("klog wrote to stderr itself: %q", stderr)
			}
			var got []string
			for _, e := range entries(t, buf) {
				if e["component"] != Component {
					t.Errorf("entry without component=%s: %v", Component, e)
				}
				got = append(got, e["level"].(string)+" "+e["msg"].(string))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
