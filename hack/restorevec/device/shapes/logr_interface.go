// 1.21 logs through the global klog (v2.9.0, logr v0.4.0: Logger is an interface).
package main

import (
	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kubectl-nodestate/kubectl-nodestate/hack/restorevec/device/gen"
)

func setLogger(log *gen.Log) (logr.Logger, error) {
	klog.SetLogger(logger{log})
	return logger{log}, nil
}

// logger hands the manager's logs to gen.Log.
type logger struct{ log *gen.Log }

func (logger) Enabled() bool                                    { return true }
func (l logger) Info(msg string, kv ...interface{})             { l.log.Info(msg, kv...) }
func (l logger) Error(err error, msg string, kv ...interface{}) { l.log.Error(err, msg, kv...) }
func (l logger) V(int) logr.Logger                              { return l }
func (l logger) WithValues(...interface{}) logr.Logger          { return l }
func (l logger) WithName(string) logr.Logger                    { return l }
