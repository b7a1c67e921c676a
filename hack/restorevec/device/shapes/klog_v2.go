// 1.19 logs through klog/v2, with printf calls still.
package main

import "k8s.io/klog/v2"

var klogInitFlags, klogSetOutput, klogSetOutputBySeverity = klog.InitFlags, klog.SetOutput, klog.SetOutputBySeverity
