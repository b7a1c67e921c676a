module sigs.k8s.io/scheduler-plugins

go 1.25.0
