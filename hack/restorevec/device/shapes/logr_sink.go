// 1.33+: a logr.Logger (logr 1.x: a struct over a LogSink), set as klog's and, from 1.35, passed
// to the manager.
package main

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

func setLogger(log *gen.Log) (logr.Logger, error) {
	logger := logr.New(sink{log})
	klog.SetLogger(logger)
	return logger, nil
}

// sink hands the manager's error logs to gen.Log.
type sink struct{ log *gen.Log }

func (sink) Init(logr.RuntimeInfo)                    {}
func (sink) Enabled(int) bool                         { return true }
func (sink) Info(int, string, ...any)                 {}
func (s sink) Error(err error, msg string, kv ...any) { s.log.Error(err, msg, kv...) }
func (s sink) WithValues(...any) logr.LogSink         { return s }
func (s sink) WithName(string) logr.LogSink           { return s }
