// 1.17 logs through klog v1.
package main

import "k8s.io/klog"

var klogInitFlags, klogSetOutput, klogSetOutputBySeverity = klog.InitFlags, klog.SetOutput, klog.SetOutputBySeverity
